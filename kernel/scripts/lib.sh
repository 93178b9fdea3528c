# shellcheck shell=bash disable=SC2034 # the settings are for the scripts that source this
# Common settings for the kernel harness scripts; sourced, never run.
#
# Everything large (source, git trees, build trees, ccache, initramfs) lives
# under ASPACE_KCACHE, outside the repository, so that two engineers (or CI
# and a developer) can keep separate caches.

set -euo pipefail

KDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ASPACE_KCACHE=${ASPACE_KCACHE:-$HOME/.cache/aspace-kernel}
# the patch series to test: a directory holding `series` and its patches
ASPACE_PATCHES=${ASPACE_PATCHES:-$KDIR/patches}
ASPACE_PATCHES=$(cd "$ASPACE_PATCHES" 2>/dev/null && pwd || echo "$ASPACE_PATCHES")

KVERSION=6.12.117
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz
# the pristine source as a git repository (one commit, tag `pristine`)
KGIT=$ASPACE_KCACHE/linux.git
KTREES=$ASPACE_KCACHE/trees
# builds of the harness's own programs (selftests, headers)
KBUILDS=$ASPACE_KCACHE/build
export CCACHE_DIR=${CCACHE_DIR:-$ASPACE_KCACHE/ccache}
# the kernel's build stamps, fixed so that ccache hits across trees
export KBUILD_BUILD_TIMESTAMP=${KBUILD_BUILD_TIMESTAMP:-2025-01-01}
export KBUILD_BUILD_USER=aspace KBUILD_BUILD_HOST=harness

DESIGNS=(linux numa_split numa_locks aspace_central aspace)

# The kernel build directory of TREE's CONFIG: inside the tree, so that
# with CCACHE_BASEDIR set to the tree every tree compiles with the same
# relative paths and ccache hits across trees (a mutant, a new version of
# the series) for every file whose preprocessed content is unchanged.
builddir() { echo "$KTREES/$1/.aspace-build/$2"; }

log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# nproc for make, niced: the development hosts are shared
jobs() { nproc; }
