#!/usr/bin/env python3
"""Reads the marks and the lackey trace of `aspace __model-trace` (see
scripts/model-shared-lines.sh) and prints the model's shared lines as JSON.

Segments: each marker store opens or closes one measured exec; they
alternate between the two threads (first thread A). A line is shared when
both threads write it in their execs, each at least a quarter as often as
the other. Its accesses in one exec form visits: accesses fewer than GAP
memory accesses apart are one visit; a visit with a store is a write.

`execs` keeps every measured exec's accesses to the shared lines, in order,
each with its place in the exec (its index over the exec's memory accesses,
0..1): accesses to one line at most TOUCH_GAP accesses apart (one
instruction's load and locked update) are one touch, a write when any of
them stores. The simulator places each touch where the exec made it, so
another CPU can take the line between two touches of one visit when it asks
for it in between (under contention it does)."""
import collections, json, sys

GAP = 64
TOUCH_GAP = 4
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
index = {l: i for i, l in enumerate(sorted(shared, key=lambda l: -wa[l]))}
execs = []
for s in segments:
    n = max(len(s), 1)
    touches, last = [], {}
    for i, (ll, wr) in enumerate(s):
        if ll not in index:
            continue
        prev = last.get(ll)
        if prev is not None and i - prev[0] <= TOUCH_GAP:
            t = touches[prev[1]]
            t[2] = t[2] or wr
            last[ll] = (i, prev[1])
            continue
        touches.append([round(i / n, 5), index[ll], wr])
        last[ll] = (i, len(touches) - 1)
    execs.append([[at, l, 1 if w else 0] for at, l, w in touches])
head = json.dumps({
    "source": "valgrind lackey on %s: two threads exec in turns (exclude), %d measured execs each; a line both write (each at least 1/4 as often), visits %d accesses apart, touches %d" % (where, len(a), GAP, TOUCH_GAP),
    "lines": out,
    "touch_gap": TOUCH_GAP,
}, indent=2)
# One exec a line: [place, line, write] per touch.
body = ",\n".join("    " + json.dumps(e, separators=(",", ":")) for e in execs)
print(head[:-2] + ',\n  "execs": [\n' + body + "\n  ]\n}")
