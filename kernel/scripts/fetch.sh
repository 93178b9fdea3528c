#!/usr/bin/env bash
# fetch.sh: install the build and boot tools (apt) and unpack Debian's
# linux-source-6.12 into $ASPACE_KCACHE/linux.git as one pristine commit.
#
# Usage: fetch.sh
# Idempotent: a second run checks the version and returns.
. "$(dirname "$0")/lib.sh"

PKGS=(linux-source-6.12 qemu-system-x86 busybox-static ccache flex bison bc
      libelf-dev libssl-dev cpio gcc make xz-utils git libc6-dev libnuma-dev
      file rsync)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	SUDO=
	[ "$(id -u)" = 0 ] || SUDO=sudo
	# through env: sudo's env_reset would drop DEBIAN_FRONTEND
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
fi

if git -C "$KGIT" rev-parse -q --verify pristine >/dev/null 2>&1; then
	v=$(git -C "$KGIT" show pristine:Makefile | awk '
		/^VERSION =/ {a=$3} /^PATCHLEVEL =/ {b=$3} /^SUBLEVEL =/ {c=$3}
		END {print a "." b "." c}')
	[ "$v" = "$KVERSION" ] || die "$KGIT holds $v, want $KVERSION"
	log "pristine $KVERSION already in $KGIT"
	exit 0
fi

[ -f "$KSRC_TARBALL" ] || die "$KSRC_TARBALL missing after install"
mkdir -p "$ASPACE_KCACHE"
tmp=$ASPACE_KCACHE/unpack.$$
rm -rf "$tmp" "$KGIT"
mkdir -p "$tmp"
log "unpacking $KSRC_TARBALL"
tar -C "$tmp" -xJf "$KSRC_TARBALL"
src=$(echo "$tmp"/linux-source-*)
[ -f "$src/Makefile" ] || die "no kernel tree in $KSRC_TARBALL"
log "committing the pristine tree"
git init -q "$src"
git -C "$src" config core.autocrlf false
git -C "$src" config gc.auto 0
# the source tree ships no .gitignore for some generated paths: add all
git -C "$src" add -A -f .
git -C "$src" -c user.name=aspace -c user.email=aspace@localhost \
	commit -q -m "Linux $KVERSION (Debian linux-source-6.12), pristine"
git -C "$src" tag pristine
mv "$src/.git" "$KGIT"
git -C "$KGIT" config core.bare true
rm -rf "$tmp"
log "pristine $KVERSION in $KGIT"
