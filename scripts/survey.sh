#!/usr/bin/env bash
# The survey of a machine (`aspace survey`), runnable where there is no Rust
# toolchain.
#
#   scripts/survey.sh --pack DIR             # here, with cargo: build, strip, copy
#   DIR/survey.sh --prebuilt DIR [ARGS...]   # there: run the packed binaries
#   scripts/survey.sh [ARGS...]              # with cargo: build here and run
#
# --pack builds the release `aspace` and maple's criterion bench executable
# for the default x86-64 target (no RUSTFLAGS, so they run on any x86-64
# machine with glibc as new as this one's), strips them, and copies them with
# scripts/survey/execl.c and this script into DIR; it fails if DIR would hold
# 60 MiB or more. ARGS go to `aspace survey` (`aspace survey --help`:
# --out, --max-cpus, --budget, --parts, --dry-run, ...). The survey needs a C
# compiler (`cc`, or --cc) for execl.c.
set -euo pipefail

LIMIT=$((60 * 1024 * 1024))

pack() {
    local dir=$1 root
    root=$(cd "$(dirname "$0")/.." && pwd)
    mkdir -p "$dir"
    cd "$root"
    # The host's tuning flags would make binaries that other CPUs may not run.
    unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
    cargo build --release --quiet -p aspace-lab
    local bench
    bench=$(cargo bench --quiet -p aspace-maple --bench maple --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
    [ -n "$bench" ] && [ -x "$bench" ] || { echo "survey.sh: no maple bench executable built" >&2; exit 1; }
    cp target/release/aspace "$dir/aspace"
    cp "$bench" "$dir/maple-bench"
    strip "$dir/aspace" "$dir/maple-bench"
    cp scripts/survey/execl.c "$dir/execl.c"
    cp scripts/survey.sh "$dir/survey.sh"
    local size
    size=$(cat "$dir/aspace" "$dir/maple-bench" "$dir/execl.c" "$dir/survey.sh" | wc -c)
    if [ "$size" -ge "$LIMIT" ]; then
        echo "survey.sh: $dir holds $size bytes, more than $LIMIT" >&2
        exit 1
    fi
    echo "survey.sh: packed $dir ($((size / 1024)) KiB): aspace, maple-bench, execl.c, survey.sh"
    echo "run there: $dir/survey.sh --prebuilt $dir [--out DIR] [--budget SECONDS]"
}

case "${1:-}" in
--pack)
    [ $# -eq 2 ] || { echo "usage: $0 --pack DIR" >&2; exit 2; }
    pack "$2"
    ;;
--prebuilt)
    [ $# -ge 2 ] || { echo "usage: $0 --prebuilt DIR [ARGS...]" >&2; exit 2; }
    dir=$2
    shift 2
    exec "$dir/aspace" survey --execl-src "$dir/execl.c" --maple-bench "$dir/maple-bench" "$@"
    ;;
*)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    pack "$tmp" >/dev/null
    "$tmp/aspace" survey --execl-src "$tmp/execl.c" --maple-bench "$tmp/maple-bench" "$@"
    ;;
esac
