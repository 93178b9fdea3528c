#!/usr/bin/env bash
# harness.sh: the kernel harness, end to end: fetch, apply the series,
# configure and build (test and lock_stat builds), build the guest's
# programs, run tools/testing/vma on the host, then boot every design and
# run the tests, selftests/mm and the lock_stat pass. One table; non-zero
# exit on any failure. Everything large goes to $ASPACE_KCACHE.
#
# Usage: harness.sh [-c CPUS] [-u] [-S] [-L] [-C]
#   -c  vCPUs for the tests, or several comma-separated (default 2;
#       lock_stat always runs at 4)
#   -u  also build and run the unpatched kernel beside the series
#   -S  skip selftests/mm     -L  skip the lock_stat pass
#   -C  CI mode (the default when CI=true): the test build only, every
#       design with every test at 2 vCPUs, and selftests/mm held to the
#       unpatched kernel's results for the programs that passed there
#       within ASPACE_SELFTEST_MAX_S (default here 10) seconds; no
#       lock_stat build or pass (a second cold kernel build); each boot
#       limited to ASPACE_BOOT_LIMIT (default here 1200 s) so that a hung
#       guest cannot take the run past CI's budget. What CI leaves out
#       (every selftest, 4 and 8 vCPUs, lock_stat) is run by hand:
#       kernel/README.md.
# Without kernel/patches/series (or $ASPACE_PATCHES) only the unpatched
# kernel is built and tested.
. "$(dirname "$0")/lib.sh"

usage="usage: harness.sh [-c CPUS] [-u] [-S] [-L] [-C]"
cpus=2 unpatched=0 selftests=-s lockstat=-L ci=0
[ "${CI:-}" != true ] || ci=1
while getopts c:uSLC o; do
	case $o in
	c) cpus=$OPTARG ;;
	u) unpatched=1 ;;
	S) selftests= ;;
	L) lockstat= ;;
	C) ci=1 ;;
	*) die "$usage" ;;
	esac
done
if ((ci)); then
	lockstat=
	export ASPACE_BOOT_LIMIT=${ASPACE_BOOT_LIMIT:-1200}
	export ASPACE_SELFTEST_MAX_S=${ASPACE_SELFTEST_MAX_S:-10}
	log "CI mode: test build only, no lock_stat; selftests/mm that pass within ${ASPACE_SELFTEST_MAX_S}s on unpatched; boots limited to ${ASPACE_BOOT_LIMIT}s"
fi
S=$(dirname "$0")
t0=$SECONDS
# CPU seconds (user + system) of the finished children so far: on a busy
# host a step's wall time says little, its CPU time divided by the cores
# of an idle machine bounds what it takes there
# (`times` itself must run in this shell, not in a $(...) subshell, which
# has no finished children of its own: it writes to a file)
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
cpu_s() { tail -n 1 "$times_file" | awk '{ for (i = 1; i <= 2; i++) {
	split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }'; }
last=$SECONDS lastname='' lastcpu=0
times=()
# log each step with the time since the start; keep each one's wall and
# CPU time for the summary
step() {
	local c
	times >"$times_file"
	c=$(cpu_s)
	[ -z "$lastname" ] || times+=("$lastname=$((SECONDS - last))s(cpu $((c - lastcpu))s)")
	last=$SECONDS lastname=${1// /_} lastcpu=$c
	log "[$((SECONDS - t0)) s] $*"
}

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
log "step times: ${times[*]}"
exit $rc
