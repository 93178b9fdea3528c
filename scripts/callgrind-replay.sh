#!/usr/bin/env bash
# Instructions per replayed call of `aspace replay`, from callgrind: stable and
# reproducible whatever the machine's load (wall-clock and CPU time are not).
#
#   scripts/callgrind-replay.sh [TRACE] [REPEAT] [DESIGN] [PATTERN]
#   (default: crates/mm/tests/data/python3-alloc-loop.strace 20 linux per-vma)
#
# Runs the lab's replay under callgrind three times, collection toggled on only
# inside one of the timed loop's functions (crates/lab/src/replay.rs): the memory
# calls (`timed_memory_call`), the process events (`timed_process_event`: clone,
# execve, exit) and each run's teardown of the previous run's address spaces
# (`timed_reset`). The untimed first run, which resolves the programs and reads
# their ELF files, is not counted. Prints instructions per memory call, and per
# call and event with each run's execs, exits and teardown included.
set -euo pipefail
cd "$(dirname "$0")/.."

TRACE=${1:-crates/mm/tests/data/python3-alloc-loop.strace}
REPEAT=${2:-20}
DESIGN=${3:-linux}
PATTERN=${4:-per-vma}

command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
cargo build --release --quiet -p aspace-lab
BIN=target/release/aspace

TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT

# Instructions collected inside function $1 over the timed runs (the replay's
# output is left in $TMP).
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --toggle-collect="*$1*" "$BIN" replay "$TRACE" --designs "$DESIGN" \
        --call-pattern "$PATTERN" --repeat "$REPEAT" >"$TMP" 2>&1 || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP"
}

mem=$(count timed_memory_call)
proc=$(count timed_process_event)
reset=$(count timed_reset)
LINE=$(grep -m1 "memory calls," "$TMP")
calls=$(sed -n 's/^[^:]*: \([0-9]*\) memory calls, .*/\1/p' <<<"$LINE")
events=$(sed -n 's/.* memory calls, \([0-9]*\) process events.*/\1/p' <<<"$LINE")
[ -n "$calls" ] && [ -n "$events" ] || { echo "could not read the replay's summary" >&2; exit 1; }
awk -v m="$mem" -v p="$proc" -v r="$reset" -v c="$calls" -v e="$events" -v n="$REPEAT" \
    -v t="$TRACE" -v d="$DESIGN" -v pat="$PATTERN" 'BEGIN {
    printf "%s (%s, %s): %d memory calls and %d process events per run, %d runs\n", t, d, pat, c, e, n
    printf "  instructions per memory call:                          %8.0f\n", m / (c * n)
    printf "  per call or event, each run'"'"'s execs and exits included: %8.0f\n", (m + p + r) / ((c + e) * n)
    printf "  per run: memory calls %.0f, process events %.0f, teardown %.0f\n", m / n, p / n, r / n
}'
