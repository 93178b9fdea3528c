#!/usr/bin/env bash
# selftests.sh: build the kernel's tools/testing/selftests/mm, statically,
# from the pristine tree plus kernel/tests/fixes (6.12.117's khugepaged.c
# misses an include), into $ASPACE_KCACHE/selftests-mm (initramfs.sh puts
# them in the guest as /selftests/mm). The programs are the same for every
# design: the series does not touch them.
#
# Usage: selftests.sh
. "$(dirname "$0")/lib.sh"

tree=$("$(dirname "$0")/apply.sh" tools none "$KDIR"/tests/fixes/*.patch)
out=$ASPACE_KCACHE/selftests-mm
build=$ASPACE_KCACHE/build/selftests-mm
hdr=$ASPACE_KCACHE/build/uapi-headers
stamp=$(git -C "$tree" rev-parse HEAD)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
	log "selftests/mm up to date in $out"
	exit 0
fi

mkdir -p "$build" "$hdr"
log "installing the uapi headers"
make -s -C "$tree" O="$ASPACE_KCACHE/build/headers" ARCH=x86_64 \
	INSTALL_HDR_PATH="$hdr" headers_install >/dev/null
log "building tools/testing/selftests/mm (static)"
# -k: a program that does not build is left out and listed, not fatal
nice -n "${ASPACE_NICE:-5}" make -k -C "$tree/tools/testing/selftests/mm" \
	-j"$(jobs)" OUTPUT="$build" KHDR_INCLUDES="-isystem $hdr/include" \
	EXTRA_CFLAGS="-static" CAN_BUILD_I386=0 >"$build/build.log" 2>&1 || true

rm -rf "$out"
mkdir -p "$out"
: >"$out/list"
unbuilt=0
for p in $(make -s -C "$tree/tools/testing/selftests/mm" OUTPUT="$build" \
	-f Makefile -f - print-gen <<<'print-gen: ; @echo $(notdir $(TEST_GEN_FILES))' 2>/dev/null); do
	if [ -x "$build/$p" ]; then
		cp "$build/$p" "$out/"
		echo "$p" >>"$out/list"
	else
		log "not built: $p (see $build/build.log)"
		unbuilt=$((unbuilt + 1))
	fi
done
# stamped only when complete: a program that did not build (a missing
# library, installed since) is tried again by the next run
if ((unbuilt)); then
	log "$unbuilt program(s) not built: not stamped, the next run builds again"
else
	echo "$stamp" >"$out/.stamp"
fi
log "$(wc -l <"$out/list") programs in $out"
