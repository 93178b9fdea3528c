#!/usr/bin/env bash
# Instruction counts per maple-tree operation, from callgrind: stable and
# reproducible regardless of machine load (wall-clock time is not).
#
# Each row runs crates/maple/benches/opcount.rs under
#   valgrind --tool=callgrind --toggle-collect='*measure_*'
# so only the measured loop is counted (the tree is built outside it), and
# divides the collected instructions by the operations done. Keys come from a
# fixed-seed generator, so a row is the same work on every run.
#
# Usage: scripts/callgrind-maple.sh            # every row
#        QUICK=1 scripts/callgrind-maple.sh    # skip the N = 10^6 rows
#        OPCOUNT_BIN=path scripts/callgrind-maple.sh  # count a given build
#            (an older commit's `opcount`, for a before/after table)
#
# Kernel reference figures (Linux 6.12 lib/maple_tree.c in its userspace
# harness, callgrind, per operation) are in crates/maple/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }

bin=${OPCOUNT_BIN:-$(cargo build --release -p aspace-maple --bench opcount --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*opcount[^"]*\)".*/\1/p' | tail -1)}
[ -x "$bin" ] || { echo "could not build the opcount bench" >&2; exit 1; }

# count <op> <n> <iters> <ops-divisor>: instructions per op
count() {
    local out
    out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --toggle-collect='*measure_*' "$bin" "$1" "$2" "$3" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    [ -n "$out" ] || { echo "no count for $1 $2" >&2; exit 1; }
    awk -v t="$out" -v d="$4" 'BEGIN { printf "%.0f", t / d }'
}

row() { # <label> <op> <n> <iters> <divisor>
    printf '| %-44s | %9s | %9s |\n' "$1" "$3" "$(count "$2" "$3" "$4" "$5")"
}

echo "| operation                                    |         N | instr/op |"
echo "|----------------------------------------------|-----------|----------|"
row "load (random hit)"                          load 100000 20000 20000
row "load through one Reader"                    reader_load 100000 20000 20000
row "exact overwrite, &self (store_range)"       overwrite_shared 100000 20000 20000
row "exact overwrite, &mut (cursor_mut)"         overwrite_mut 100000 20000 20000
row "exact overwrite, &self, XValue inline"      overwrite_shared_xvalue 100000 20000 20000
row "exact overwrite, &mut, XValue inline"       overwrite_mut_xvalue 100000 20000 20000
row "load, Arc values inline"                    load_arc_inline 100000 20000 20000
row "split of an entry then restore, &mut"       split_restore_mut 1000 20000 20000
row "split of an entry then restore, &mut"       split_restore_mut 10000 20000 20000
row "split of an entry then restore, &self"      split_restore_shared 10000 20000 20000
row "insert_range into a free gap (&self)"       insert 100000 20000 20000
row "erase (&self)"                              erase 100000 20000 20000
row "empty_area (size 5)"                        empty_area 100000 20000 20000
row "empty_area_rev (size 5)"                    empty_area_rev 100000 20000 20000
row "full iteration, per entry"                  iter 100000 5 500000
row "full iteration, folded (sum), per entry"    iter_fold 100000 5 500000
row "for loop, start ^ value, boxed u64"         for_boxed 100000 5 500000
row "fold, start ^ value, boxed u64"             fold_boxed 100000 5 500000
row "for loop, start ^ value, XValue in slot"    for_inline 100000 5 500000
row "fold, start ^ value, XValue in slot"        fold_inline 100000 5 500000
row "for loop over tree.iter(), boxed u64"       for_entries 100000 5 500000
row "fold over tree.iter(), boxed u64"           fold_entries 100000 5 500000
row "for loop over tree.iter(), XValue in slot"  for_entries_inline 100000 5 500000
row "fold over tree.iter(), XValue in slot"      fold_entries_inline 100000 5 500000
row "for loop, rangemap (reference)"             for_rangemap 100000 5 500000
row "fold, rangemap (reference)"                 fold_rangemap 100000 5 500000
row "for loop, BTreeMap (reference)"             for_btreemap 100000 5 500000
row "fold, BTreeMap (reference)"                 fold_btreemap 100000 5 500000
row "dup, Arc values, per entry"                 dup_arc 100000 3 300000
row "dup, Arc values inline (Inline), per entry" dup_arc_inline 100000 3 300000
row "dup, XValue inline, per entry"              dup_xvalue 100000 3 300000
row "dup, u64 values, per entry"                 dup_u64 100000 3 300000
if [ -z "${QUICK:-}" ]; then
    row "dup, Arc values, per entry"             dup_arc 1000000 1 1000000
    row "dup, Arc values inline (Inline), per entry" dup_arc_inline 1000000 1 1000000
fi
