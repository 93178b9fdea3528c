#!/usr/bin/env bash
# Runs every cargo-fuzz target (maple, rmap, mm) for a bounded time each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 60 s, every target)
#
# Needs a nightly toolchain (libFuzzer + AddressSanitizer); installs cargo-fuzz
# when it is missing. The committed, minimized corpus in fuzz/corpus/TARGET seeds
# each run read-only; new inputs go to a scratch directory (FUZZ_SCRATCH, default
# target/fuzz-scratch/TARGET), so a run never dirties the tree. Exits non-zero on a
# crash, leak or failed assertion; the reproducer is in fuzz/artifacts/TARGET/ and
# replays with `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-...`.
#
# Refresh the committed corpus after a long campaign with:
#   cargo +nightly fuzz cmin TARGET target/fuzz-scratch/TARGET   (then copy the
#   survivors into fuzz/corpus/TARGET, keeping a few dozen small files)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(maple rmap mm)
case "$secs" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number" >&2; exit 2 ;; esac

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz.sh: needs a nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

scratch_root="${FUZZ_SCRATCH:-$PWD/target/fuzz-scratch}"
failed=()
for t in "${targets[@]}"; do
  scratch="$scratch_root/$t"
  mkdir -p "$scratch" "fuzz/corpus/$t"
  echo "=== fuzz $t for ${secs}s (corpus: fuzz/corpus/$t, new inputs: $scratch)"
  if ! (cd fuzz && cargo +nightly fuzz run "$t" "$scratch" "corpus/$t" -- \
      -max_total_time="$secs" -max_len=4096 -timeout=30 -print_final_stats=1); then
    echo "=== fuzz $t: FAILED (reproducer under fuzz/artifacts/$t/)" >&2
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: ${targets[*]}: no crash in ${secs}s each"
