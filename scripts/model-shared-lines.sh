#!/bin/sh
# Records the lines the model's own exec shares outside its reverse maps
# (crates/lab/src/predict/model.rs explains what and why) with valgrind's
# lackey, and writes crates/lab/src/predict/model_shared.json.
#
#   scripts/model-shared-lines.sh [BINARY]     (default /bin/true; about 1 minute)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${1:-/bin/true}
command -v valgrind >/dev/null || { echo "model-shared-lines.sh: valgrind is not installed" >&2; exit 1; }
cargo build --quiet --release -p aspace-lab --manifest-path "$root/Cargo.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
valgrind --tool=lackey --trace-mem=yes --log-file="$tmp/trace" \
    "$root/target/release/aspace" __model-trace "$binary" 2>"$tmp/marks"
python3 "$root/scripts/model-shared-lines.py" "$tmp/marks" "$tmp/trace" \
    "$(uname -srm); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$root" rev-parse --short HEAD); binary $binary" \
    > "$root/crates/lab/src/predict/model_shared.json"
echo "model-shared-lines.sh: wrote crates/lab/src/predict/model_shared.json"
