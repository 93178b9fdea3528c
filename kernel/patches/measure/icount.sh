#!/usr/bin/env bash
# icount.sh: the uncontended cost of the series in guest instructions.
#
# Usage: icount.sh [-r RUNS] [-d DESIGNS] [-m N] [-e N] [SERIES_DIR]
#   -r  boots per kernel and design (default 3); each boot runs each loop 3 times
#   -d  designs of the patched kernel (default linux,aspace_central,aspace)
#   -m  mmap+munmap iterations per loop (default 20000)
#   -e  execs per loop (default 200)
#
# Builds pristine 6.12.117 (tree `unpatched`) and pristine + the whole series
# (tree `series-N`, the one check-series.sh uses) with tinyconfig +
# kernel/config/base.config (+ split.config): the guest without lockdep,
# KASAN or DEBUG_VM, in build directory `plain`. Boots each under QEMU TCG
# with -icount shift=0,sleep=off on one vCPU, where a guest nanosecond is a
# guest instruction, and runs loopcost.c: a single process that maps and
# unmaps 4 pages of a shared tmpfs file (one link and one unlink of the
# file's reverse map each), and one process that execs the dynamically
# linked kernel/tests/execself N times in a row. Prints the median cost per
# iteration of each kernel and design, and its difference from unpatched.
# Instructions, not time: cache misses and lock contention do not show.
# Uses ASPACE_KCACHE like the harness; the trees and ccache are shared with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
S=$here/../../scripts
. "$S/lib.sh"

runs=3 designs=linux,aspace_central,aspace mmap_n=20000 exec_n=200
while getopts r:d:m:e: o; do
	case $o in
	r) runs=$OPTARG ;;
	d) designs=$OPTARG ;;
	m) mmap_n=$OPTARG ;;
	e) exec_n=$OPTARG ;;
	*) die "usage: icount.sh [-r RUNS] [-d DESIGNS] [-m N] [-e N] [SERIES_DIR]" ;;
	esac
done
shift $((OPTIND - 1))
series_dir=$(cd "${1:-$ASPACE_PATCHES}" && pwd)
patches=()
while read -r p _; do
	case $p in '' | '#'*) continue ;; esac
	patches+=("$series_dir/$p")
done <"$series_dir/series"
series_tree=series-${#patches[@]}

# the plain configuration: what the test build has, less the debugging
configure_plain() { # tree
	local tree=$KTREES/$1 out frags stamp
	out=$(builddir "$1" plain)
	frags=("$KDIR/config/base.config")
	if grep -qs '^config I_MMAP_SPLIT$' "$tree/mm/Kconfig"; then
		frags+=("$KDIR/config/split.config")
	fi
	stamp=$(cat "${frags[@]}" <(git -C "$tree" rev-parse HEAD) | sha256sum | cut -c1-16)
	mkdir -p "$out"
	[ "$(cat "$out/.aspace-config" 2>/dev/null)" != "$stamp" ] || return 0
	make -s -C "$tree" O="$out" ARCH=x86_64 tinyconfig >/dev/null
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null
	make -s -C "$tree" O="$out" ARCH=x86_64 olddefconfig >/dev/null
	grep -q '^CONFIG_KASAN=y\|^CONFIG_PROVE_LOCKING=y' "$out/.config" &&
		die "$1: the plain config has debugging on"
	echo "$stamp" >"$out/.aspace-config"
}

"$S/apply.sh" unpatched none >/dev/null
"$S/apply.sh" "$series_tree" none "${patches[@]}" >/dev/null
for t in unpatched "$series_tree"; do
	configure_plain "$t"
	"$S/build.sh" "$t" plain >/dev/null
done

# the guest: busybox, loopcost, execself and its libraries, an /init
root=$ASPACE_KCACHE/icount.root
img=$ASPACE_KCACHE/icount.cpio.gz
rm -rf "$root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$(command -v busybox)" "$root/bin/busybox"
for a in sh mount poweroff cat; do ln -s busybox "$root/bin/$a"; done
gcc -Wall -Wextra -Werror -O2 -static -o "$root/bin/loopcost" "$here/loopcost.c"
make -s -C "$KDIR/tests" OUT="$root/bin" "$root/bin/execself" >&2
for lib in $(ldd "$root/bin/execself" | grep -o '/[^ ]*'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cat >"$root/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t tmpfs tmpfs /tmp
for i in 1 2 3; do
	/bin/loopcost mmap $mmap_n /tmp/loopcost.file
	/bin/loopcost exec $exec_n /bin/execself
done
poweroff -f
INIT
chmod 755 "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$img"

boot() { # bzImage [args...]
	local k=$1
	shift
	timeout 1800 qemu-system-x86_64 -machine q35 -cpu max -m 1024 -smp 1 \
		-accel tcg,thread=single -icount shift=0,sleep=off \
		-kernel "$k" -initrd "$img" -nographic -no-reboot -nodefaults \
		-serial stdio -display none \
		-append "console=ttyS0 panic=-1 quiet $*" </dev/null 2>&1 | tr -d '\r'
}

out=$ASPACE_KCACHE/logs/icount
mkdir -p "$out"
res=$out/results.txt
: >"$res"
kernels=("unpatched:unpatched")
for d in ${designs//,/ }; do kernels+=("$series_tree:$d"); done
for ((r = 1; r <= runs; r++)); do
	for kd in "${kernels[@]}"; do
		t=${kd%%:*} d=${kd#*:}
		args=()
		[ "$d" = unpatched ] || args=("i_mmap_design=$d")
		log "boot $r/$runs: $t $d"
		boot "$(builddir "$t" plain)/arch/x86/boot/bzImage" "${args[@]}" >"$out/$d-$r.log"
		# -o: the firmware's screen-clearing escapes end without a
		# newline, so the first LOOPCOST line may not start a line
		loops=$(grep -ao 'LOOPCOST [a-z]* [0-9 ]*' "$out/$d-$r.log" || true)
		n=$(grep -c . <<<"$loops" || true)
		((n == 6)) || die "$d: $n of 6 loops finished (log $out/$d-$r.log)"
		# (quiet hides the design line; check-series.sh checks it)
		sed "s/^/$d /" <<<"$loops" >>"$res"
	done
done

echo
echo "guest instructions per iteration (QEMU -icount shift=0, 1 vCPU, plain config;"
echo "median of $((runs * 3)) loops over $runs boots; spread = (max - min) / median)"
awk '
	# one-dimensional arrays only (v[k, i]): POSIX awk, mawk and gawk alike
	{ k = $1 " " $3; v[k, ++n[k]] = $6 }
	END {
		for (k in n) {
			m = n[k]
			# insertion sort
			for (i = 2; i <= m; i++) { x = v[k, i]; j = i - 1
				while (j > 0 && v[k, j] > x) { v[k, j + 1] = v[k, j]; j-- }
				v[k, j + 1] = x }
			med[k] = m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2
			spread[k] = (v[k, m] - v[k, 1]) / med[k] * 100
		}
		printf "%-16s %14s %8s %7s %14s %8s %7s\n", "kernel", "mmap+munmap", "vs unp.", "spread", "exec", "vs unp.", "spread"
		split("unpatched '"${designs//,/ }"'", order, " ")
		for (i = 1; i in order; i++) {
			d = order[i]; a = d " mmap"; b = d " exec"
			printf "%-16s %14.0f %+7.2f%% %6.2f%% %14.0f %+7.2f%% %6.2f%%\n", d,
				med[a], (med[a] / med["unpatched mmap"] - 1) * 100, spread[a],
				med[b], (med[b] / med["unpatched exec"] - 1) * 100, spread[b]
		}
	}' "$res"
