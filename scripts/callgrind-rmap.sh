#!/usr/bin/env bash
# Single-thread instruction counts of the rmap churn and walk, every design.
#
#   scripts/callgrind-rmap.sh [CHURN_OPS] [WALKS]
#
# Runs crates/rmap/examples/icount.rs under callgrind with collection
# toggled on only inside the measured function (setup excluded), for every
# design that `icount list` prints (Design::ALL), then for the bare interval
# tree of the Linux-derived designs (no lock, no handle, no counters: the
# like-for-like row for the kernel's mm/interval_tree.c), and prints a
# markdown table: instructions per churn op (5 inserts + 5 removes, one call
# and so one lock hold each, 6000 resident libc entries) and per walk of one
# pgoff (1200 hits), with the ratio to Linux 6.12's own interval tree on the
# same work (callgrind, userspace build: 1,568 per churn op, 39,931 per walk;
# shared/DOMAIN.md). Instruction counts do not depend on machine load: two
# runs print the same table.
set -euo pipefail
cd "$(dirname "$0")/.."

CHURN_OPS=${1:-2000}
WALKS=${2:-20}
KERNEL_CHURN=1568
KERNEL_WALK=39931

command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
cargo build --release --quiet -p aspace-rmap --example icount
BIN=target/release/examples/icount
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Total instructions collected while inside function $1 of `icount $2 $3 $4`.
# The toggle names the exact function, `icount::$1`: a pattern such as
# `*measured_walk*` would also match the walk's callback closure
# (`icount::measured_walk::{{closure}}`), and callgrind toggles collection
# off on entering a matching function, so every callback's instructions
# went uncounted (about 6,000 a walk of 1,200 hits).
count() {
    local fn=$1 out="$TMP/cg.$2.$3.$1"
    shift
    valgrind --tool=callgrind --toggle-collect="icount::${fn}" \
        --callgrind-out-file="$out" "$BIN" "$@" >/dev/null 2>"$TMP/log" ||
        { cat "$TMP/log" >&2; exit 1; }
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

echo "callgrind, $CHURN_OPS churn ops and $WALKS walks per design; kernel = Linux 6.12 mm/interval_tree.c"
echo
echo "| design | churn instr/op | vs kernel | walk instr | vs kernel |"
echo "|---|---:|---:|---:|---:|"
row() {
    awk -v d="$1" -v c="$2" -v w="$3" -v n="$CHURN_OPS" -v m="$WALKS" \
        -v kc="$KERNEL_CHURN" -v kw="$KERNEL_WALK" 'BEGIN {
        printf "| %s | %.0f | %.2fx | %.0f | %.2fx |\n", d, c / n, c / n / kc, w / m, w / m / kw
    }'
}
for d in $("$BIN" list); do
    row "$d" "$(count measured_churn "$d" churn "$CHURN_OPS")" \
        "$(count measured_walk "$d" walk "$WALKS")"
done
row "bare tree of the linux designs" \
    "$(count measured_tree_churn tree churn "$CHURN_OPS")" \
    "$(count measured_tree_walk tree walk "$WALKS")"
echo "| kernel (Linux 6.12) | $KERNEL_CHURN | 1.00x | $KERNEL_WALK | 1.00x |"
