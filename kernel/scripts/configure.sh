#!/usr/bin/env bash
# configure.sh: write the .config of one build: tinyconfig plus fragments.
#
# Usage: configure.sh TREE CONFIG
#   TREE    a tree name from apply.sh (unpatched, patched, ...)
#   CONFIG  test     base + debug + KASAN (lockdep, DEBUG_VM, KASAN): the test build
#           smoke    base + debug (lockdep, DEBUG_VM, no KASAN): the per-patch
#                    build of check-series.sh (shorter to build and to boot)
#           lockstat base + lock_stat: the measuring build
# The build directory is $ASPACE_KCACHE/build/TREE-CONFIG. Where the tree's
# Kconfig has I_MMAP_SPLIT, split.config is added. Every option a fragment
# sets is checked in the result: a silently dropped option is an error.
# The .config is rewritten only when a fragment or Kconfig changed.
. "$(dirname "$0")/lib.sh"

tname=${1:?usage: configure.sh TREE test|smoke|lockstat}
cfg=${2:?usage: configure.sh TREE test|smoke|lockstat}
tree=$KTREES/$tname
out=$(builddir "$tname" "$cfg")
[ -f "$tree/Makefile" ] || die "no tree $tree: run apply.sh $tname"

frags=("$KDIR/config/base.config")
case $cfg in
test) frags+=("$KDIR/config/debug.config" "$KDIR/config/kasan.config") ;;
smoke) frags+=("$KDIR/config/debug.config") ;;
lockstat) frags+=("$KDIR/config/lockstat.config") ;;
*) die "unknown config $cfg (test, smoke, lockstat)" ;;
esac
if grep -qs '^config I_MMAP_SPLIT$' "$tree"/mm/Kconfig "$tree"/init/Kconfig; then
	frags+=("$KDIR/config/split.config")
fi

mkdir -p "$out"
stamp=$(cat "${frags[@]}" | cat - <(git -C "$tree" rev-parse HEAD) | sha256sum | cut -c1-16)
if [ -f "$out/.config" ] && [ "$(cat "$out/.aspace-config" 2>/dev/null)" = "$stamp" ]; then
	log "$tname-$cfg: .config up to date"
	exit 0
fi

mk() { make -s -C "$tree" O="$out" ARCH=x86_64 "$@"; }
mk tinyconfig >/dev/null
"$tree/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null
mk olddefconfig >/dev/null

bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=n | '# CONFIG_'*' is not set')
		sym=${line#\# }
		sym=${sym%% *}
		sym=${sym%%=*}
		if grep -q "^$sym=" "$out/.config"; then
			log "$sym: wanted off, got $(grep "^$sym=" "$out/.config")"
			bad=1
		fi
		;;
	CONFIG_*=*)
		if ! grep -qx "$line" "$out/.config"; then
			log "$line: not in the result ($(grep "^${line%%=*}=" "$out/.config" || echo unset); a dependency is missing)"
			bad=1
		fi
		;;
	esac
done < <(cat "${frags[@]}")
((bad == 0)) || die "$tname-$cfg: the fragments do not hold in $out/.config"
echo "$stamp" >"$out/.aspace-config"
log "$tname-$cfg: configured in $out"
