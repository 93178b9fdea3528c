#!/usr/bin/env bash
# check-series.sh: check that every prefix of the series stands on its own.
#
# Usage: check-series.sh [-C CONFIG] [-c CPUS] [-d DESIGNS] [-o TESTS] [-k FROM[-TO]] [-n]
#                        [SERIES_DIR]
#   SERIES_DIR  a directory with `series` and its patches (default $ASPACE_PATCHES)
#   -C  the build: test (default; lockdep, DEBUG_VM, KASAN) or smoke (the same
#       without KASAN: shorter to build and to boot), see configure.sh
#   -c  vCPUs of the smoke boots (default 2, over two NUMA nodes)
#   -d  boot only these designs (comma-separated), where the patch has them
#       (default: every design the patched tree accepts, plus aspace:eager)
#   -o  guest tests run by each smoke boot (default filemap,fork_exec;
#       `none`: boot to /init and power off)
#   -k  check only patches FROM..TO (numbers in `series`, 1-based)
#   -n  checkpatch only: no build, no boot
#
# For each patch k, in its own tree series-k ($ASPACE_KCACHE/trees):
#  1. apply patches 1..k to pristine 6.12.117 (apply.sh);
#  2. scripts/checkpatch.pl --strict on patch k: any ERROR fails; every
#     WARNING or CHECK must be justified in the commit message, which must
#     name its type as --show-types prints it (e.g. MACRO_ARG_REUSE);
#  3. configure and build CONFIG (with ccache): a compiler warning in the
#     build log fails (the log of this build only: a file compiled by an
#     earlier build of the same tree is not compiled again, so a tree's
#     first build is the one that sees every file; ccache replays a
#     cached file's warnings, so a new tree always sees them all);
#  4. boot it under TCG (boot.sh) once per design the tree accepts
#     (i_mmap_design=...; before patch 2 the tree has no design and must print
#     no design line), check the one line "i_mmap: design <name>", run the
#     smoke tests, and scan the console log (logcheck.sh).
# Prints one table, one row per patch; exits non-zero if any row fails.
# Keeping a tree per patch means a change to patch k rebuilds only what it
# touches in trees k.. (about 2 GB of disk each, build included).
. "$(dirname "$0")/lib.sh"

usage="usage: check-series.sh [-C CONFIG] [-c CPUS] [-d DESIGNS] [-o TESTS] [-k FROM[-TO]] [-n] [SERIES_DIR]"
cfg=test cpus=2 only_designs='' tests=filemap,fork_exec range='' nobuild=0
while getopts C:c:d:o:k:n o; do
	case $o in
	C) cfg=$OPTARG ;;
	c) cpus=$OPTARG ;;
	d) only_designs=$OPTARG ;;
	o) tests=$OPTARG ;;
	k) range=$OPTARG ;;
	n) nobuild=1 ;;
	*) die "$usage" ;;
	esac
done
shift $((OPTIND - 1))
series_dir=$(cd "${1:-$ASPACE_PATCHES}" && pwd) || die "$usage"
[ -f "$series_dir/series" ] || die "no series file in $series_dir"
S=$(dirname "$0")
limit=${ASPACE_BOOT_LIMIT:-1200}

patches=()
while read -r p _; do
	case $p in '' | '#'*) continue ;; esac
	[ -f "$series_dir/$p" ] || die "series lists $p, which is missing"
	patches+=("$series_dir/$p")
done <"$series_dir/series"
n=${#patches[@]}
((n > 0)) || die "empty series in $series_dir"
from=1 to=$n
if [ -n "$range" ]; then
	from=${range%-*}
	to=${range#*-}
	((from >= 1 && to <= n && from <= to)) || die "-k $range: the series has $n patches"
fi

# the guest's root, rebuilt when the tests changed since it was made
img=$ASPACE_KCACHE/initramfs.cpio.gz
if ((!nobuild)) && [ "$tests" != none ]; then
	if [ ! -f "$img" ] || [ -n "$(find "$KDIR/tests" -newer "$img" -type f | head -n 1)" ]; then
		"$S/initramfs.sh" >/dev/null
	fi
fi

# what failed and why, in order; the cells are computed in subshells
notes=$(mktemp "${TMPDIR:-/tmp}/check-series.XXXXXX")
trap 'rm -f "$notes"' EXIT
note() { printf '%s\n' "$@" >>"$notes"; }

# checkpatch of one patch: prints the cell, returns 1 on a failure
checkpatch() { # tree patch
	local tree=$1 p=$2 out msg e w c bad=0 t
	out=$(cd "$tree" && perl scripts/checkpatch.pl --strict --show-types --no-color \
		--quiet "$p" 2>&1 | tr -d '\r') || true
	e=$(grep -c '^ERROR:' <<<"$out" || true)
	w=$(grep -c '^WARNING:' <<<"$out" || true)
	c=$(grep -c '^CHECK:' <<<"$out" || true)
	# the commit message: after the headers, up to the --- line
	msg=$(sed -n '/^$/,/^---$/p' "$p")
	while read -r t; do
		[ -n "$t" ] || continue
		if ! grep -q "$t" <<<"$msg"; then
			bad=1
			note "$(basename "$p"): checkpatch $t not justified in the commit message:"
			grep -E "^(WARNING|CHECK):$t:" <<<"$out" | sed 's/^/    /' >>"$notes"
		fi
	done < <(grep -oE '^(WARNING|CHECK):[A-Z_0-9]+' <<<"$out" | cut -d: -f2 | sort -u)
	if ((e)); then
		bad=1
		note "$(basename "$p"): checkpatch errors:"
		grep -A2 '^ERROR:' <<<"$out" | head -n 30 | sed 's/^/    /' >>"$notes"
	fi
	printf '%s/%s/%s%s' "$e" "$w" "$c" "$( ((bad)) && echo ' FAIL' || echo ' ok')"
	return $bad
}

# one smoke boot: prints the cell (the design, then ok or what failed)
smoke() { # tree-name kernel design
	local tname=$1 kernel=$2 d=$3 name variant args lines logf rc=0 bad='' t r
	name=${d%%:*} variant=${d#*:}
	logf=$ASPACE_KCACHE/logs/$tname/smoke-$cfg-${d/:/-}-c$cpus.log
	mkdir -p "$(dirname "$logf")"
	args=(rcupdate.rcu_cpu_stall_timeout=300)
	if [ "$tests" = none ]; then
		args+=(aspace.run=none)
	else
		args+=(aspace.run=tests aspace.only="$tests")
	fi
	[ "$d" = unpatched ] || args+=("i_mmap_design=$name")
	[ "$variant" != eager ] || args+=(aspace.promote=eager)
	log "$tname: booting $d at $cpus vCPUs (log $logf)"
	"$S/boot.sh" -c "$cpus" -t "$limit" -l "$logf" "$kernel" "${args[@]}" >/dev/null || rc=$?
	((rc == 0)) || bad+=" qemu:$rc"
	grep -aq '^ASPACE-END' "$logf" || bad+=" no-end"
	lines=$(tr -d '\r' <"$logf" | grep -a 'i_mmap: design ' | sed 's/^\[[^]]*\] *//')
	if [ "$d" = unpatched ]; then
		[ -z "$lines" ] || bad+=" design-line"
	elif [ "$lines" != "i_mmap: design $name" ]; then
		bad+=" design-line"
	fi
	if [ "$variant" = eager ] && ! grep -aq '^ASPACE-PROMOTE eager' "$logf"; then
		bad+=" no-promote"
	fi
	if [ "$tests" != none ]; then
		for t in ${tests//,/ }; do
			r=$(grep -a "^RESULT $t " "$logf" | tail -n 1 | awk '{print $3}' | tr -d '\r')
			[ "$r" = PASS ] || bad+=" $t:${r:-NONE}"
		done
	fi
	"$S/logcheck.sh" "$logf" >/dev/null || bad+=" reports"
	if [ -n "$bad" ]; then
		note "$tname $d:$bad (log $logf)"
		printf '%s:FAIL' "$d"
		return 1
	fi
	printf '%s:ok' "$d"
}

declare -a rows=()
failed=0
for ((k = from; k <= to; k++)); do
	p=${patches[k - 1]}
	tname=series-$k
	# the Subject header, unfolded, without its [PATCH n/m] tag
	subject=$(awk '/^Subject: / { s = substr($0, 10); f = 1; next }
		f && /^[ \t]/ { s = s $0; next } f { exit } END { print s }' "$p" |
		sed 's/^\[PATCH[^]]*\] *//')
	row_bad=0
	log "patch $k/$n: $subject"
	if ! tree=$("$S/apply.sh" "$tname" none "${patches[@]:0:k}"); then
		rows+=("$(printf '%2d  %-52.52s  %s' "$k" "$subject" 'does not apply')")
		failed=1
		continue
	fi
	cp_cell=$(checkpatch "$tree" "$p") || row_bad=1
	build_cell=- boot_cell=-
	if ((!nobuild)); then
		"$S/configure.sh" "$tname" "$cfg"
		start=$SECONDS
		if kernel=$("$S/build.sh" "$tname" "$cfg"); then
			blog=$(builddir "$tname" "$cfg")/build.log
			nw=$(grep -c 'warning:' "$blog" || true)
			build_cell="ok $((SECONDS - start))s"
			if ((nw)); then
				build_cell="${nw} warnings"
				row_bad=1
				note "$tname: compiler warnings in $blog:"
				grep 'warning:' "$blog" | head -n 10 | sed 's/^/    /' >>"$notes"
			fi
			designs=()
			if grep -rqs 'i_mmap_design' "$tree/mm"; then
				for d in "${DESIGNS[@]}"; do
					grep -rqs "\"$d\"" "$tree/mm" || continue
					if [ -z "$only_designs" ] || [[ ,$only_designs, == *,$d,* ]]; then
						designs+=("$d")
					fi
					if [ "$d" = aspace ] && { [ -z "$only_designs" ] ||
						[[ ,$only_designs, == *,aspace:eager,* ]]; }; then
						designs+=(aspace:eager)
					fi
				done
			else
				designs=(unpatched)
			fi
			boot_cell=''
			for d in "${designs[@]}"; do
				c=$(smoke "$tname" "$kernel" "$d") || row_bad=1
				boot_cell+="$c "
			done
		else
			build_cell=FAILED
			row_bad=1
			note "$tname: build failed: $(builddir "$tname" "$cfg")/build.log"
		fi
	fi
	((row_bad == 0)) || failed=1
	rows+=("$(printf '%2d  %-52.52s  %-14s  %-16s  %s' "$k" "$subject" "$cp_cell" "$build_cell" "$boot_cell")")
done

echo
echo "check-series: $series_dir on $KVERSION; build: $cfg config; smoke boots at $cpus vCPUs, tests: $tests"
printf '%2s  %-52s  %-14s  %-16s  %s\n' '#' patch 'checkpatch E/W/C' "build ($cfg)" 'boot: design line, tests, log'
printf '%s\n' "${rows[@]}"
if [ -s "$notes" ]; then
	echo
	cat "$notes"
fi
echo
if ((failed)); then
	echo "RESULT: FAIL"
	exit 1
fi
echo "RESULT: PASS"
