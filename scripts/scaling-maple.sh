#!/usr/bin/env bash
# Two threads, each overwriting entries of its own tree, against one thread,
# with the machine's own ceiling beside them: the same one-thread run started
# as two processes at once (separate address spaces share no line, no
# allocator and no epoch collector, so their sum is what two cores give here).
#
# Each round runs, back to back: one thread alone; two processes of one thread
# each, at once; one process of two threads. Rounds interleave, so a slow
# spell of the host falls on all three; the medians over rounds are printed:
#   procs/1t    the host's two-core ceiling for this loop
#   threads/1t  the target's ratio (two threads, each writing its own tree)
#   threads/procs  what sharing one process costs (1.0 = nothing)
#
# Usage: scripts/scaling-maple.sh [ROUNDS] [MODE]
#   MODE: threads (boxed u64 values, default) | threads_inline (XValue)
#         | control (random updates of a private 4 MB array per thread)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
mode=${2:-threads}
ops=2000000
[ "$mode" = control ] && ops=50000000

# OPCOUNT_BIN: an opcount binary to run instead of this checkout's (for
# instance one built from another commit, to compare two builds).
bin=${OPCOUNT_BIN:-$(cargo build --release -p aspace-maple --bench opcount --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*opcount[^"]*\)".*/\1/p' | tail -1)}
[ -x "$bin" ] || { echo "could not build the opcount bench" >&2; exit 1; }

# The writes (or updates) per second of one run's summary line.
rate() { sed -n 's/.*: \([0-9]*\) [a-z]*\/s in all.*/\1/p'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Every run starts its timed loop at a wall-clock time given to it (after its
# setup), so that the two processes' loops begin together, as two threads'
# do at their barrier.
at() { echo $(($(date +%s%3N) + 700)); }
for r in $(seq "$rounds"); do
    one=$(OPCOUNT_START_AT_MS=$(at) "$bin" "$mode" 1 "$ops" | rate)
    t=$(at)
    OPCOUNT_START_AT_MS=$t "$bin" "$mode" 1 "$ops" >"$tmp/a" &
    OPCOUNT_START_AT_MS=$t "$bin" "$mode" 1 "$ops" >"$tmp/b"
    wait
    procs=$(($(rate <"$tmp/a") + $(rate <"$tmp/b")))
    two=$(OPCOUNT_START_AT_MS=$(at) "$bin" "$mode" 2 "$ops" | rate)
    echo "$one $procs $two"
done | awk '
    { one[NR] = $1; p[NR] = $2 / $1; t[NR] = $3 / $1; tp[NR] = $3 / $2
      printf "round %d: 1 thread %.2f M/s, procs/1t %.3f, threads/1t %.3f, threads/procs %.3f\n", NR, $1 / 1e6, p[NR], t[NR], tp[NR] }
    function median(a, n,   i, j, x, s) {
        for (i = 1; i <= n; i++) s[i] = a[i]
        for (i = 2; i <= n; i++) { x = s[i]; for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]; s[j + 1] = x }
        return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
    }
    END { printf "median over %d rounds: procs/1t %.3f  threads/1t %.3f  threads/procs %.3f\n", NR, median(p, NR), median(t, NR), median(tp, NR) }'
