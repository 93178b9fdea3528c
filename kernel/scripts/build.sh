#!/usr/bin/env bash
# build.sh: build one configured kernel (bzImage) with ccache, niced.
#
# Usage: build.sh TREE CONFIG      (after configure.sh TREE CONFIG)
# Prints the bzImage's path. The build log is $out/build.log.
. "$(dirname "$0")/lib.sh"

tname=${1:?usage: build.sh TREE CONFIG}
cfg=${2:?usage: build.sh TREE CONFIG}
tree=$KTREES/$tname
out=$(builddir "$tname" "$cfg")
[ -f "$out/.config" ] || die "$out not configured: run configure.sh $tname $cfg"

mkdir -p "$CCACHE_DIR"
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# paths relative to the tree (see builddir in lib.sh); no -g, so the
# working directory need not be hashed either
export CCACHE_BASEDIR=$tree CCACHE_NOHASHDIR=1
start=$SECONDS
if ! nice -n "${ASPACE_NICE:-5}" make -C "$tree" O="$out" ARCH=x86_64 \
	CC="ccache gcc" -j"$(jobs)" bzImage >"$out/build.log" 2>&1; then
	grep -E 'error|Error' "$out/build.log" | head -20 >&2
	die "$tname-$cfg: build failed; see $out/build.log"
fi
log "$tname-$cfg: built in $((SECONDS - start)) s"
echo "$out/arch/x86/boot/bzImage"
