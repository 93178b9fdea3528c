import json, email, http.client, decimal, csv, hashlib, zlib, bz2, lzma, struct, array, select, socket
# A deterministic mix of the memory calls a real program makes:
# glibc mmaps blocks above its mmap threshold (fixed by GLIBC_TUNABLES, so it does not
# move), grows them with mremap (realloc), and Python's allocator maps 1 MiB arenas.
for i in range(150):
    b = bytearray(200000 + (i % 5) * 8192)
    b.extend(bytes(150000))
    objs = [str(j) * 3 for j in range(20000 + (i % 3) * 5000)]
    d = {k: k for k in objs[:3000]}
    del b, objs, d
