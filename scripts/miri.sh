#!/usr/bin/env bash
# Runs the tests of the crates with `unsafe` (aspace-maple, aspace-rmap)
# under Miri, where a nightly toolchain with the miri component is
# installed; exits 0 with a notice when it is not.
#
#   scripts/miri.sh            every unit and integration test of both crates
#                              (heavy tests shrink under cfg(miri)); the two
#                              crates run side by side, each in its own
#                              target directory, when the machine has 2 or
#                              more cores (MIRI_JOBS=1 runs them one after
#                              the other)
#   scripts/miri.sh --quick    the subset CI runs: the idiomatic-layer model
#                              test, bad input and the concurrent stress test
#                              of aspace-maple; rmap's interval-tree unit
#                              tests and its bad-input and conformance tests
#                              (every design, through the synthetic topology)
#   scripts/miri.sh -- ARGS    extra arguments for the test binaries
#
# Cost (CPU time, the figure that does not depend on the machine's load;
# wall time is about half of it on 2 idle cores): see the table printed at
# the end of each run and crates/maple/SAFETY.md. Under Miri `Topology::Os`
# is a synthetic 2-node x 2-CPU machine (Miri refuses rmap's /sys reads and
# its sched_getcpu call), so rmap's integration tests run unchanged.
#
# Not used: `-Zmiri-many-seeds` (it multiplies the run time by the seed
# count; the concurrent tests already vary their interleavings by count),
# and `cargo miri nextest` (one process per test would parallelise further,
# but cargo-nextest is not part of the toolchain; the two crates in two
# lanes use both cores of the CI machine already).
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
  run -p aspace-maple --test api --test bad_input --test stress -- "$@"
  # rmap's own unsafe: the interval tree addresses its arena unchecked
  # (its deterministic tests; the randomized model tests run in the full
  # mode), and every design through bad input and the conformance suite.
  run -p aspace-rmap --lib -- interval_tree::tests::removing_the_strict_maximum \
    interval_tree::tests::refs_round_trip interval_tree::tests::find_exact "$@"
  run -p aspace-rmap --test bad_input --test conformance -- "$@"
  exit 0
fi

jobs="${MIRI_JOBS:-$(nproc 2>/dev/null || echo 1)}"
lanes=(aspace-maple aspace-rmap)
if [ "$jobs" -lt 2 ]; then
  for c in "${lanes[@]}"; do
    run -p "$c" --lib --tests -- "$@"
  done
  exit 0
fi

# Two lanes, one per crate, each with its own target directory (cargo locks
# a target directory for the whole `cargo test`, tests included).
base="${CARGO_TARGET_DIR:-target}"
logs="$base/miri-logs"
mkdir -p "$logs"
pids=()
t0=$SECONDS
for c in "${lanes[@]}"; do
  (
    export CARGO_TARGET_DIR="$base/miri-$c"
    run -p "$c" --lib --tests -- "$@"
  ) >"$logs/$c.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!lanes[@]}"; do
  if wait "${pids[$i]}"; then
    status=passed
  else
    status=FAILED
    rc=1
  fi
  echo "== lane ${lanes[$i]}: $status (log: $logs/${lanes[$i]}.log)"
  cat "$logs/${lanes[$i]}.log"
done
echo "== miri: both lanes done in $((SECONDS - t0)) s"
exit "$rc"
