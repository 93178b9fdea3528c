#!/usr/bin/env bash
# mutant.sh: break the series on purpose and show which tests catch it.
#
# Usage: mutant.sh [-c CPUS] [MUTANT.patch...]   (default: kernel/mutants/*.patch)
# Each mutant is applied on top of the series ($ASPACE_PATCHES) in its own
# tree (mutant-NAME), built (test config), and booted for the designs its
# "designs:" line names plus `linux` as a control. A mutant is caught when
# at least one test fails, or the kernel reports, in every design it names.
# Prints, per mutant and design, what failed; exits non-zero if a mutant
# went uncaught (or the control failed).
. "$(dirname "$0")/lib.sh"

cpus=2
while getopts c: o; do
	case $o in
	c) cpus=$OPTARG ;;
	*) die "usage: mutant.sh [-c CPUS] [MUTANT.patch...]" ;;
	esac
done
shift $((OPTIND - 1))
S=$(dirname "$0")
mutants=("$@")
((${#mutants[@]})) || mutants=("$KDIR"/mutants/*.patch)

summary=()
uncaught=0
for m in "${mutants[@]}"; do
	name=mutant-$(basename "$m" .patch)
	designs=$(sed -n 's/^designs: *//p' "$m" | head -n 1 | tr ' ' ,)
	[ -n "$designs" ] || die "$m has no 'designs:' line"
	log "$name: designs $designs (control: linux)"
	"$S/apply.sh" "$name" "$ASPACE_PATCHES" "$m" >/dev/null
	"$S/configure.sh" "$name" test
	"$S/build.sh" "$name" test >/dev/null
	"$S/run-tests.sh" -c "$cpus" -d "linux,$designs" "$name" || true
	res=$ASPACE_KCACHE/logs/$name/last-results.tsv
	for d in linux ${designs//,/ }; do
		failed=$(awk -F'\t' -v d="$d" '$2 == d && $3 ~ /FAIL|NONE|REPORTS|WRONG|REGRESSED/ {
			printf "%s%s(%s)", sep, $1, $3; sep = " " }' "$res")
		if [ "$d" = linux ]; then
			[ -z "$failed" ] || { uncaught=1; failed="CONTROL FAILED: $failed"; }
			summary+=("$(printf '%-32s %-12s %s' "$name" "$d" "${failed:-passes (control)}")")
		else
			[ -n "$failed" ] || { uncaught=1; failed="NOT CAUGHT"; }
			summary+=("$(printf '%-32s %-12s %s' "$name" "$d" "$failed")")
		fi
	done
done
echo
printf '%-32s %-12s %s\n' mutant design "what catches it"
printf '%s\n' "${summary[@]}"
((uncaught == 0)) || { echo "RESULT: a mutant went uncaught, or a control failed"; exit 1; }
echo "RESULT: every mutant caught"
