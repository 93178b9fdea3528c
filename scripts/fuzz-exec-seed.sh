#!/usr/bin/env bash
# Seeds the mm_exec fuzz target's scratch corpus with real ELF files of this
# machine (not committed: they are large and machine-specific).
#
#   scripts/fuzz-exec-seed.sh [DIR]     (default: target/fuzz-scratch/mm_exec)
#
# Copies small executables and libraries (<= 64 KiB, the fuzz run's -max_len)
# plus the headers-only first 64 KiB of a few big ones (libc, ld.so): exec reads
# only headers, so a prefix exercises the same paths.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-target/fuzz-scratch/mm_exec}"
mkdir -p "$dir"
n=0
for f in /bin/true /bin/false /bin/sleep /bin/echo /usr/bin/env /sbin/ldconfig \
         /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 \
         /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libXdmcp.so.6; do
  [ -f "$f" ] || continue
  head -c 65536 "$(readlink -f "$f")" > "$dir/seed-$(basename "$f")"
  n=$((n + 1))
done
echo "fuzz-exec-seed.sh: $n seeds in $dir"
