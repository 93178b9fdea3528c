#!/usr/bin/env bash
# initramfs.sh: the guest's root file system, one for every design and
# config: busybox-static, the harness's tests (kernel/tests), the dynamic
# helper with the host's libc.so.6 and ld.so, and tools/testing/selftests/mm
# when selftests.sh has built them.
#
# Usage: initramfs.sh      prints the path of $ASPACE_KCACHE/initramfs.cpio.gz
. "$(dirname "$0")/lib.sh"

root=$ASPACE_KCACHE/initramfs.root
img=$ASPACE_KCACHE/initramfs.cpio.gz
bb=$(command -v busybox) || die "busybox missing: run fetch.sh"
file -L "$bb" 2>/dev/null | grep -q 'statically linked' ||
	ldd "$bb" 2>&1 | grep -q 'not a dynamic' || die "$bb is not static (busybox-static)"

rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,mnt,tests,etc}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
	[ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
done

make -s -C "$KDIR/tests" OUT="$root/tests" >&2
install -m 755 "$KDIR/tests/init.sh" "$root/init"

# the dynamic helper's libraries, at the paths its interpreter expects
libs=$(ldd "$root/tests/execself" | grep -o '/[^ ]*')
for lib in $libs; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
sed "s|@LIBS@|$(echo "$libs" | tr "\n" " " | sed "s/ $//")|" "$KDIR/tests/tests.list" >"$root/tests/tests.list"

if [ -d "$ASPACE_KCACHE/selftests-mm" ]; then
	mkdir -p "$root/selftests"
	cp -a "$ASPACE_KCACHE/selftests-mm" "$root/selftests/mm"
	cp "$KDIR/tests/selftests-mm.list" "$root/selftests/mm/"
fi

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) |
	gzip -1 >"$img.tmp"
mv "$img.tmp" "$img"
log "$(du -h "$img" | cut -f1) initramfs at $img"
echo "$img"
