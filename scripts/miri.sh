#!/usr/bin/env bash
# Runs the unit tests of the crates with `unsafe` under Miri, where a nightly
# toolchain with the miri component is installed. Heavy tests shrink under
# cfg(miri). Exits 0 with a notice when Miri is not available.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: not installed (rustup +nightly component add miri); skipping"
  exit 0
fi
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance -Zmiri-ignore-leaks}"
cargo +nightly miri test -p aspace-maple --lib --tests "$@"
# rmap: the interval tree addresses its arena unchecked (see its module docs).
cargo +nightly miri test -p aspace-rmap --lib interval_tree
