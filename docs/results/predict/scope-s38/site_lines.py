#!/usr/bin/env python3
"""Per call site of a saved kernel-cost profile (<design>.recorded.json):
holds per iteration, mean recorded hold (host ns, before the simulation's
transfers), mean lines written / only read (lock word not counted), over
every slot. Usage: site_lines.py RECORDED_JSON"""
import json, sys
from collections import defaultdict

p = json.load(open(sys.argv[1]))
acc = defaultdict(lambda: [0, 0.0, 0, 0])
for s in p['slots']:
    for st in s['steps']:
        h = st.get('Hold')
        if h is None:
            continue
        a = acc[h['site']]
        a[0] += 1
        a[1] += h['hold_ns']
        a[2] += len(h['written'])
        a[3] += len(h['read'])
n = len(p['slots'])
print(f"{p['label']} ({p['workload']}, {n} slots): site, holds per iteration, mean hold ns, lines written, lines read")
for site, (k, ns, w, r) in sorted(acc.items()):
    print(f"  {site:14} {k / n:5.1f} {ns / k:7.0f} {w / k:6.1f} {r / k:6.1f}")
