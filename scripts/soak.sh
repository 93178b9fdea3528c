#!/usr/bin/env bash
# Soak: `aspace soak` for SECONDS (default 600) on every design, then the RSS
# curve, to show that reclamation stays bounded (no RSS growth from deferred
# frees) and that no invariant breaks under churn.
#
#   scripts/soak.sh [SECONDS] [OUTDIR] [extra aspace soak args...]
#
# Writes OUTDIR/soak.txt (the report), OUTDIR/soak.json (everything, with the RSS
# curve) and OUTDIR/rss.tsv ("seconds<TAB>VmRSS KiB", one line per sample; plot
# it with e.g. gnuplot: plot "rss.tsv" with lines). OUTDIR defaults to
# target/soak. Exits non-zero if any invariant was violated.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
out="${2:-target/soak}"
shift $(($# > 2 ? 2 : $#))
mkdir -p "$out"
cargo build --release --locked -p aspace-lab
rc=0
./target/release/aspace soak --duration "$secs" --json "$out/soak.json" \
  --curve "$out/rss.tsv" "$@" | tee "$out/soak.txt" || rc=$?
echo "soak: report in $out/soak.txt, RSS curve in $out/rss.tsv, JSON in $out/soak.json"
exit "$rc"
