#!/usr/bin/env python3
"""Reads the marks and the lackey trace of `aspace __model-trace` (see
scripts/model-shared-lines.sh) and prints the model's shared lines as JSON.

Segments: each marker store opens or closes one measured exec; they
alternate between the two threads (first thread A). A line is shared when
both threads write it in their execs, each at least a quarter as often as
the other. Its accesses in one exec form visits: accesses fewer than GAP
memory accesses apart are one visit; a visit with a store is a write."""
import collections, json, sys

GAP = 64
marks, trace, where = sys.argv[1], sys.argv[2], sys.argv[3]
mark = None
files = {}
for line in open(marks):
    parts = line.split()
    if parts[:1] == ["MARK"]:
        mark = int(parts[1], 16)
    elif parts[:1] == ["FILE"]:
        files[int(parts[1], 16)] = parts[2]
if mark is None:
    sys.exit("no marker address in " + marks)
segments = []
current = None
for line in open(trace):
    if len(line) < 4 or line[0] != " ":
        continue
    kind = line[1]
    try:
        addr = int(line[3:].split(",")[0], 16)
    except ValueError:
        continue
    if addr == mark and kind in "SM":
        if current is None:
            current = []
            segments.append(current)
        else:
            current = None
        continue
    if current is not None:
        current.append((addr >> 6, kind != "L"))
a, b = segments[0::2], segments[1::2]
if not a or not b:
    sys.exit("no measured exec in the trace")


def writes(segs):
    w = collections.Counter()
    for s in segs:
        for l, wr in s:
            if wr:
                w[l] += 1
    return w


wa, wb = writes(a), writes(b)
shared = [l for l in wa if l in wb and min(wa[l] / len(a), wb[l] / len(b)) >= 0.25 * max(wa[l] / len(a), wb[l] / len(b))]
out = []
for l in sorted(shared, key=lambda l: -wa[l]):
    wv = rv = 0
    for s in a:
        last, wrote, open_ = -10**9, False, False
        for i, (ll, wr) in enumerate(s):
            if ll != l:
                continue
            if i - last > GAP:
                if open_:
                    wv, rv = (wv + 1, rv) if wrote else (wv, rv + 1)
                open_, wrote = True, False
            wrote |= wr
            last = i
        if open_:
            wv, rv = (wv + 1, rv) if wrote else (wv, rv + 1)
    what = "file " + files[l] if l in files else "global line %x" % (l << 6)
    out.append({"what": what, "write_visits": round(wv / len(a), 1), "read_visits": round(rv / len(a), 1)})
print(json.dumps({
    "source": "valgrind lackey on %s: two threads exec in turns (exclude), %d measured execs each; a line both write (each at least 1/4 as often), visits %d accesses apart" % (where, len(a), GAP),
    "lines": out,
}, indent=2))
