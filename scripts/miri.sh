#!/usr/bin/env bash
# Runs the tests of the crates with `unsafe` (aspace-maple, aspace-rmap)
# under Miri, where a nightly toolchain with the miri component is
# installed; exits 0 with a notice when it is not.
#
#   scripts/miri.sh            every unit and integration test of both crates
#                              (heavy tests shrink under cfg(miri)), in two
#                              lanes that run side by side, each with its own
#                              target directory (MIRI_JOBS=1: one after the
#                              other, in target/miri)
#   scripts/miri.sh --quick    the subset CI runs: the idiomatic-layer model
#                              test, bad input, the concurrent stress test and
#                              the inline-value test of aspace-maple; rmap's deterministic
#                              interval-tree tests and its bad-input test
#                              (every design, through the synthetic topology)
#   scripts/miri.sh -- ARGS    extra arguments for the test binaries
#
# Under Miri `Topology::Os` is a synthetic 2-node x 2-CPU machine (Miri
# refuses rmap's /sys reads and its sched_getcpu call), so rmap's
# integration tests run unchanged. maple's tests/loom.rs (cfg(loom)) and
# tests/serde.rs (feature serde) are empty here: loom has its own CI step,
# serde holds no unsafe.
#
# Cost, measured in CPU seconds (user time of `cargo miri test` per test
# binary, compilation included: the first binary of a target directory pays
# for the dependencies) on the 2-core development machine, which was loaded
# by other work (wall time there was 2-4x the CPU time):
#   lane a: maple lib 241, edges 382, drop_count 134, model 108; lib and
#           edges measured before
#           random_large_space (400 -> 200 operations) and edges' sizes
#           were cut, ~-200 together
#   lane b: rmap lib 192, bad_input 36, accounting 56, concurrency 83,
#           multimap 16, conformance 146 (with rmap's dependencies);
#           maple api 21, bad_input 29,
#           exact_fit 49, memory 36, stress 8
#   iter_switch (lane a, added later): its tests ran 159 s (wall, not
#           CPU, at load average ~20), not counted below
# Lane a ~670, lane b ~700 (with maple's dependencies built again): about
# 23 CPU-minutes in all, so about 12 minutes on 2 idle cores.
#
# CI runs --quick, bounded to 420 s: the full run would take CI (about 8
# minutes today) past its 20-minute budget. Run the full script before
# merging a change to unsafe code.
#
# Not used: `-Zmiri-many-seeds` (it multiplies the run time by the seed
# count; the concurrent tests vary their interleavings by count already),
# and `cargo miri nextest` (one process per test would parallelise further,
# but cargo-nextest is not part of the toolchain; the two lanes use both
# cores of the 2-core machines this project runs on).
#
# Flags, and why each is needed (re-checked in stop 22, when the crate's own
# epoch replaced crossbeam-epoch, whose needs they first were):
#   -Zmiri-tree-borrows          the aliasing model Rust's rules are settling on,
#       and the one the crates' unsafe code is argued against (see
#       `Entry`'s `MaybeUninit` field in maple). Without crossbeam-epoch, the
#       quick subset and the epoch's tests also pass under the default
#       Stacked Borrows (MIRIFLAGS=-Zmiri-ignore-leaks scripts/miri.sh --quick).
#   -Zmiri-permissive-provenance maple stores small integers (`XValue`, `u32`)
#       in the slot word as pointers made from integers, as the kernel's
#       xa_mk_value does; with a rust-version below 1.84 (no
#       `ptr::without_provenance_mut`) that is an integer-to-pointer cast,
#       which Miri warns about on every store without this flag.
#   -Zmiri-ignore-leaks          deferred garbage still queued in an exited
#       thread's bags (the epoch's orphans) or in the main thread's when the
#       process exits is never run; our own leaks are counted natively by
#       tests/drop_count.rs.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
[ "${1:-}" = "--" ] && shift

if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: not installed (rustup +nightly component add miri); skipping"
  exit 0
fi

export MIRIFLAGS="${MIRIFLAGS:--Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks}"
# Property tests: a couple of cases each (each case is a full random
# sequence); the stress tests run their minimum.
export ASPACE_MODEL_CASES="${ASPACE_MODEL_CASES:-1}"
export ASPACE_API_CASES="${ASPACE_API_CASES:-2}"
export ASPACE_STRESS_SECS="${ASPACE_STRESS_SECS:-0.2}"
export PROPTEST_CASES="${PROPTEST_CASES:-2}"

run() {
  echo "== miri: $*"
  local t0=$SECONDS
  cargo +nightly miri test -q "$@"
  echo "== miri: $* passed in $((SECONDS - t0)) s"
}

if [ "$quick" = 1 ]; then
  run -p aspace-maple --test api --test bad_input --test stress --test inline -- "$@"
  # rmap's own unsafe: the interval tree addresses its arena unchecked
  # (its deterministic tests; the randomized model tests run in the full
  # mode), and every design through bad input and the conformance suite.
  run -p aspace-rmap --lib -- interval_tree::tests::removing_the_strict_maximum \
    interval_tree::tests::refs_round_trip interval_tree::tests::find_exact "$@"
  run -p aspace-rmap --test bad_input -- "$@"
  exit 0
fi

jobs="${MIRI_JOBS:-$(nproc 2>/dev/null || echo 1)}"
# Each lane is a list of `cargo miri test` argument sets, run in order.
lane_a=("-p aspace-maple --lib --test edges --test drop_count --test model --test model_inline --test iter_switch")
lane_b=("-p aspace-rmap --lib --tests"
  "-p aspace-maple --test api --test bad_input --test exact_fit --test memory --test stress --test inline --test fast_path")

run_lane() {
  local args
  for args in "$@"; do
    # shellcheck disable=SC2086 # each entry is a list of words
    run $args -- "${extra[@]}"
  done
}
extra=("$@")

if [ "$jobs" -lt 2 ]; then
  run_lane "${lane_a[@]}" "${lane_b[@]}"
  exit 0
fi

# Two lanes, each with its own target directory: cargo locks a target
# directory for the whole `cargo test`, running tests included.
base="${CARGO_TARGET_DIR:-target}"
logs="$base/miri-logs"
mkdir -p "$logs"
t0=$SECONDS
(export CARGO_TARGET_DIR="$base/miri-lane-a"; run_lane "${lane_a[@]}") >"$logs/lane-a.log" 2>&1 &
pid_a=$!
(export CARGO_TARGET_DIR="$base/miri-lane-b"; run_lane "${lane_b[@]}") >"$logs/lane-b.log" 2>&1 &
pid_b=$!
rc=0
for lane in a b; do
  pid_var="pid_$lane"
  if wait "${!pid_var}"; then status=passed; else status=FAILED; rc=1; fi
  echo "== miri lane $lane: $status"
  cat "$logs/lane-$lane.log"
done
echo "== miri: both lanes done in $((SECONDS - t0)) s"
exit "$rc"
