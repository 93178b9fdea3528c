#!/usr/bin/env python3
"""hostrows.py LABEL=validation.json ...: the 2-thread (and 1-thread) host rows side by side."""
import json, sys
cols = []
for a in sys.argv[1:]:
    label, f = a.split("=", 1)
    d = json.load(open(f))
    rows = {(c["what"], c["setting"]): c for c in d["checks"]}
    met = sum(1 for c in d["checks"] if c["met"])
    cols.append((label, rows, met, len(d["checks"])))
keys = [k for k in cols[0][1] if k[1].startswith("this host")]
print("| row | measured | " + " | ".join(c[0] for c in cols) + " |")
print("|---|---|" + "---|" * len(cols))
for k in keys:
    m = cols[0][1][k]["published_value"]
    cells = []
    for _, rows, _, _ in cols:
        c = rows[k]
        cells.append("%.3f (%+.0f%%)%s" % (c["predicted"], c["error"], "" if c["met"] else " **no**"))
    print("| %s, %s | %.3f | %s |" % (k[0], k[1].replace("this host, ", "").replace(", model exec cost", ""), m, " | ".join(cells)))
print("| targets met | | " + " | ".join("%d / %d" % (c[2], c[3]) for c in cols) + " |")
