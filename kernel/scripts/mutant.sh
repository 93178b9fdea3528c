#!/usr/bin/env bash
# mutant.sh: break the series on purpose and show which tests catch it.
#
# Usage: mutant.sh [-c CPUS] [-o TESTS] [MUTANT.patch...]
#   default: every kernel/mutants/*.patch (kernel/mutants/README.md)
#   -c  vCPUs (default 2, or the mutant's own "cpus:" line)
#   -o  run only these tests (comma-separated; default all of tests.list)
# Each mutant is applied on top of the series ($ASPACE_PATCHES) in one
# scratch tree (`mutant`: only the files a mutant touches are rewritten and
# rebuilt), built (test config), and booted for the designs its "designs:"
# line names plus `linux` as a control. A mutant is caught when, in every
# design it names, a test fails or the kernel reports (lockdep, KASAN ...).
# Prints one table (mutant, design, the failing tests and the first kernel
# report) and keeps it in $ASPACE_KCACHE/logs/mutants.txt; each mutant's
# logs go to $ASPACE_KCACHE/logs/mutant-NAME/. Exits non-zero if a mutant
# went uncaught or the control failed.
. "$(dirname "$0")/lib.sh"

cpus='' only=''
while getopts c:o: o; do
	case $o in
	c) cpus=$OPTARG ;;
	o) only=$OPTARG ;;
	*) die "usage: mutant.sh [-c CPUS] [-o TESTS] [MUTANT.patch...]" ;;
	esac
done
shift $((OPTIND - 1))
S=$(dirname "$0")
# a mutant may wedge the guest (a migration entry that the broken walk
# never removes): that is a catch, but it should not cost run-tests'
# default 40 minutes per boot
export ASPACE_BOOT_LIMIT=${ASPACE_BOOT_LIMIT:-1200}
mutants=("$@")
((${#mutants[@]})) || mutants=("$KDIR"/mutants/*.patch)

summary=()
uncaught=0
for m in "${mutants[@]}"; do
	name=mutant-$(basename "$m" .patch)
	designs=$(sed -n 's/^designs: *//p' "$m" | head -n 1 | tr -s ' ' ,)
	[ -n "$designs" ] || die "$m has no 'designs:' line"
	c=${cpus:-$(sed -n 's/^cpus: *//p' "$m" | head -n 1)}
	c=${c:-2}
	log "$name: designs $designs (control: linux), $c vCPUs"
	"$S/apply.sh" mutant "$ASPACE_PATCHES" "$m" >/dev/null
	"$S/configure.sh" mutant test
	"$S/build.sh" mutant test >/dev/null
	o=()
	[ -z "$only" ] || o=(-o "$only")
	rm -rf "$ASPACE_KCACHE/logs/mutant"
	"$S/run-tests.sh" -c "$c" -d "linux,$designs" ${o[@]+"${o[@]}"} mutant || true
	rm -rf "$ASPACE_KCACHE/logs/$name"
	mv "$ASPACE_KCACHE/logs/mutant" "$ASPACE_KCACHE/logs/$name"
	res=$ASPACE_KCACHE/logs/$name/last-results.tsv
	for d in linux ${designs//,/ }; do
		failed=$(awk -F'\t' -v d="$d" '$2 == d && $3 ~ /FAIL|NONE|REPORTS|WRONG|REGRESSED/ {
			printf "%s%s(%s)", sep, $1, $3; sep = " " }' "$res")
		# the kernel's first report, if any (lockdep, KASAN, BUG ...)
		first=$("$S/logcheck.sh" "$ASPACE_KCACHE/logs/$name/tests-${d/:/-}-c$c.log" |
			grep -v 'Call Trace' | head -n 1 | sed 's/^\[[^]]*\] *//' | tr -d '\r') || true
		[ -z "$first" ] || failed+="; kernel: $first"
		if [ "$d" = linux ]; then
			[ -z "$failed" ] || { uncaught=1; failed="CONTROL FAILED: $failed"; }
			summary+=("$(printf '%-30s %-14s %s' "$name" "$d" "${failed:-passes (control)}")")
		else
			[ -n "$failed" ] || { uncaught=1; failed="NOT CAUGHT"; }
			summary+=("$(printf '%-30s %-14s %s' "$name" "$d" "$failed")")
		fi
	done
done
{
	echo
	printf '%-30s %-14s %s\n' mutant design "what catches it"
	printf '%s\n' "${summary[@]}"
	if ((uncaught)); then
		echo "RESULT: a mutant went uncaught, or a control failed"
	else
		echo "RESULT: every mutant caught"
	fi
} | tee "$ASPACE_KCACHE/logs/mutants.txt"
((uncaught == 0))
