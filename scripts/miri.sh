#!/usr/bin/env bash
# Runs the tests of the crates with `unsafe` (aspace-maple, aspace-rmap)
# under Miri, where a nightly toolchain with the miri component is
# installed; exits 0 with a notice when it is not.
#
#   scripts/miri.sh            every unit and integration test of both crates
#                              (heavy tests shrink under cfg(miri); about
#                              10-15 CPU-minutes)
#   scripts/miri.sh --quick    the subset CI runs (about 5 minutes here): the
#                              idiomatic-layer model test, bad input, the
#                              concurrent stress test and the inline-value
#                              test of aspace-maple, and the
#                              deterministic tests of rmap's interval tree
#
# rmap's integration tests are not run: its topology probes read /sys and
# call sched_getcpu, which Miri's isolation refuses (they would need
# -Zmiri-disable-isolation and a Miri shim for sched_getcpu).
#   scripts/miri.sh -- ARGS    extra arguments for the test binaries
#
# Flags, and why each is needed:
#   -Zmiri-tree-borrows          the reclamation crate, crossbeam-epoch, is
#       incompatible with Miri's default aliasing model (Stacked Borrows):
#       under it Miri reports undefined behaviour inside crossbeam-epoch
#       itself (internal.rs, `&*local_ptr` while the list still aliases the
#       node), a known incompatibility; crossbeam checks itself under Tree
#       Borrows, and so do we.
#   -Zmiri-permissive-provenance crossbeam-epoch casts integers to pointers
#       (its tagged atomic pointers), which -Zmiri-strict-provenance stops at
#       on the first cast.
#   -Zmiri-ignore-leaks          crossbeam-epoch's global collector keeps
#       deferred garbage and thread registrations until the process exits;
#       our own leaks are counted natively by tests/drop_count.rs.
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
  # rmap's own unsafe: the interval tree addresses its arena unchecked. The
  # deterministic tree tests fit the CI budget; the randomized model tests
  # (by_start/by_interval_against_model, identical_intervals_churn) run in
  # the full mode.
  run -p aspace-rmap --lib -- interval_tree::tests::removing_the_strict_maximum \
    interval_tree::tests::refs_round_trip interval_tree::tests::find_exact "$@"
else
  run -p aspace-maple --lib --tests -- "$@"
  run -p aspace-rmap --lib -- "$@"
fi
