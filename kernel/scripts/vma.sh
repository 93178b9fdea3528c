#!/usr/bin/env bash
# vma.sh: build and run tools/testing/vma (mm/vma.c compiled in userspace,
# with ASan and UBSan) for one tree, on the host.
#
# Usage: vma.sh TREE
# 6.12.117's harness lacks a vma_close() stub; kernel/tests/fixes has it.
# It is applied to the tree's copy of the harness for the build and taken
# out again (a series that adds the stub itself needs no fix).
. "$(dirname "$0")/lib.sh"

tname=${1:?usage: vma.sh TREE}
tree=$KTREES/$tname
[ -d "$tree/tools/testing/vma" ] || die "no tree $tree: run apply.sh $tname"
fix=$KDIR/tests/fixes/vma-close-stub.patch
if grep -q 'vma_close' "$tree/tools/testing/vma/vma_internal.h"; then
	:
elif git -C "$tree" apply --check "$fix" 2>/dev/null; then
	git -C "$tree" apply "$fix"
	trap 'git -C "$tree" apply -R "$fix"' EXIT
else
	die "$(basename "$fix") does not apply to $tname"
fi
rc=0
nice -n "${ASPACE_NICE:-5}" make -s -C "$tree/tools/testing/vma" -j"$(jobs)" \
	>"$tree/tools/testing/vma/build.log" 2>&1 || rc=$?
((rc == 0)) || { tail -20 "$tree/tools/testing/vma/build.log" >&2; die "$tname: tools/testing/vma does not build"; }
out=$("$tree/tools/testing/vma/vma" 2>&1) || rc=$?
echo "$out" | tail -n 3
((rc == 0)) || die "$tname: tools/testing/vma failed (exit $rc)"
