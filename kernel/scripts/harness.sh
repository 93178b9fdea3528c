#!/usr/bin/env bash
# harness.sh: the kernel harness, end to end: fetch, apply the series,
# configure and build (test and lock_stat builds), build the guest's
# programs, run tools/testing/vma on the host, then boot every design and
# run the tests, selftests/mm and the lock_stat pass. One table; non-zero
# exit on any failure. Everything large goes to $ASPACE_KCACHE.
#
# Usage: harness.sh [-c CPUS] [-u] [-S] [-L]
#   -c  vCPUs for the tests (default 2; lock_stat always runs at 4)
#   -u  also build and run the unpatched kernel beside the series
#   -S  skip selftests/mm     -L  skip the lock_stat pass
# Without kernel/patches/series (or $ASPACE_PATCHES) only the unpatched
# kernel is built and tested.
. "$(dirname "$0")/lib.sh"

cpus=2 unpatched=0 selftests=-s lockstat=-L
while getopts c:uSL o; do
	case $o in
	c) cpus=$OPTARG ;;
	u) unpatched=1 ;;
	S) selftests= ;;
	L) lockstat= ;;
	*) die "usage: harness.sh [-c CPUS] [-u] [-S] [-L]" ;;
	esac
done
S=$(dirname "$0")
t0=$SECONDS
step() { log "[$((SECONDS - t0)) s] $*"; }

trees=()
if [ -f "$ASPACE_PATCHES/series" ]; then
	trees+=(patched)
	((unpatched)) && trees+=(unpatched)
else
	log "no series in $ASPACE_PATCHES: testing the unpatched kernel only"
	trees+=(unpatched)
fi
configs=(test)
[ -z "$lockstat" ] || configs+=(lockstat)

step "fetch"
"$S/fetch.sh"
for t in "${trees[@]}"; do
	step "apply $t"
	if [ "$t" = patched ]; then
		"$S/apply.sh" patched "$ASPACE_PATCHES" >/dev/null
	else
		"$S/apply.sh" unpatched none >/dev/null
	fi
	for c in "${configs[@]}"; do
		step "configure and build $t-$c"
		"$S/configure.sh" "$t" "$c"
		"$S/build.sh" "$t" "$c" >/dev/null
	done
done
if [ -n "$selftests" ]; then
	step "selftests/mm"
	"$S/selftests.sh"
fi
step "initramfs"
"$S/initramfs.sh" >/dev/null

rc=0
step "tools/testing/vma"
"$S/apply.sh" tools none "$KDIR"/tests/fixes/*.patch >/dev/null
for t in tools "${trees[@]}"; do
	[ "$t" = unpatched ] && continue # the same mm/vma.c as tools
	printf 'tools/testing/vma (%s): ' "$t"
	"$S/vma.sh" "$t" | tail -n 1 || rc=1
done
# one run, one table: the unpatched kernel (when built) is its first column
step "run-tests ${trees[*]}"
if [ "${trees[0]}" = patched ]; then
	u=()
	((unpatched)) && u=(-u unpatched)
	"$S/run-tests.sh" -c "$cpus" $selftests $lockstat ${u[@]+"${u[@]}"} patched || rc=1
else
	"$S/run-tests.sh" -c "$cpus" $selftests $lockstat unpatched || rc=1
fi
step "done (exit $rc)"
exit $rc
