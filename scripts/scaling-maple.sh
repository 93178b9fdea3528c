#!/usr/bin/env bash
# Two threads, each overwriting entries of its own tree, against one thread,
# with the machine's own ceiling beside them: the same one-thread run started
# as two processes at once (separate address spaces share no line, no
# allocator and no epoch collector, so their sum is what two cores give here).
#
# Each round runs, back to back: one thread alone; two processes of one thread
# each, at once; one process of two threads. Every run starts its timed loop
# at a wall-clock time it is given (after building its tree), so the two
# processes' loops begin together, as two threads' do at their barrier.
# Rounds interleave, so a slow spell of the host falls on all three; the
# medians over rounds are printed:
#   procs/1t       the host's two-core ceiling for this loop
#   threads/1t     the target's ratio (two threads, each writing its own tree)
#   threads/procs  what sharing one process costs (1.0 = nothing)
#
# Usage: scripts/scaling-maple.sh [ROUNDS] [MODE]
#   MODE: threads (boxed u64 values, default) | threads_inline (XValue)
#         | control (random updates of a private 4 MB array per thread)
#   OPCOUNT_BIN=path    run this opcount binary instead of this checkout's
#   OPCOUNT_BIN_B=path  also run this one, alternating with the first in
#                       every round (to compare two builds in one run)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
mode=${2:-threads}
ops=2000000
case "$rounds" in '' | *[!0-9]* | 0) echo "scaling-maple.sh: ROUNDS must be a whole number above 0" >&2; exit 2 ;; esac
case "$mode" in threads | threads_inline | control) ;; *) echo "scaling-maple.sh: MODE is threads, threads_inline or control" >&2; exit 2 ;; esac
[ "$mode" = control ] && ops=50000000

bin=${OPCOUNT_BIN:-$(cargo build --release -p aspace-maple --bench opcount --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*opcount[^"]*\)".*/\1/p' | tail -1)}
[ -x "$bin" ] || { echo "could not build the opcount bench" >&2; exit 1; }
bins=("$bin")
if [ -n "${OPCOUNT_BIN_B:-}" ]; then
    [ -x "$OPCOUNT_BIN_B" ] || { echo "OPCOUNT_BIN_B is not an executable" >&2; exit 1; }
    bins+=("$OPCOUNT_BIN_B")
fi

# The writes (or updates) per second of one run's summary line.
rate() { sed -n 's/.*: \([0-9]*\) [a-z]*\/s in all.*/\1/p'; }
# A start time far enough ahead for a run to build its tree first.
at() { echo $(($(date +%s%3N) + 700)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
    for b in "${bins[@]}"; do
        one=$(OPCOUNT_START_AT_MS=$(at) "$b" "$mode" 1 "$ops" | rate)
        t=$(at)
        OPCOUNT_START_AT_MS=$t "$b" "$mode" 1 "$ops" >"$tmp/a" &
        OPCOUNT_START_AT_MS=$t "$b" "$mode" 1 "$ops" >"$tmp/b"
        wait
        procs=$(($(rate <"$tmp/a") + $(rate <"$tmp/b")))
        two=$(OPCOUNT_START_AT_MS=$(at) "$b" "$mode" 2 "$ops" | rate)
        echo "$b $one $procs $two"
    done
done | awk '
    function median(a, n,   i, j, x, s) {
        for (i = 1; i <= n; i++) s[i] = a[i]
        for (i = 2; i <= n; i++) { x = s[i]; for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]; s[j + 1] = x }
        return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
    }
    { k = ++n[$1]; bin[$1] = 1
      one[$1, k] = $2; pr[$1, k] = $3; two[$1, k] = $4
      printf "%s round %d: 1 thread %.2f M/s, procs/1t %.3f, threads/1t %.3f, threads/procs %.3f\n", $1, k, $2 / 1e6, $3 / $2, $4 / $2, $4 / $3 }
    END {
        for (b in bin) {
            for (i = 1; i <= n[b]; i++) { o[i] = one[b, i]; p[i] = pr[b, i]; t[i] = two[b, i]
                                          rp[i] = pr[b, i] / one[b, i]; rt[i] = two[b, i] / one[b, i]; rtp[i] = two[b, i] / pr[b, i] }
            printf "%s, medians over %d rounds: 1 thread %.2f M/s, 2 procs %.2f M/s, 2 threads %.2f M/s; procs/1t %.3f  threads/1t %.3f  threads/procs %.3f\n",
                b, n[b], median(o, n[b]) / 1e6, median(p, n[b]) / 1e6, median(t, n[b]) / 1e6, median(rp, n[b]), median(rt, n[b]), median(rtp, n[b])
        }
    }'
