#!/usr/bin/env python3
"""Per design: the holds' line accesses and charged transfers per hold,
averaged over the holds of an exec (predict.json's `hold_lines`), reads and
writes apart. Usage: per_exec.py PREDICT_JSON CPUS"""
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
for c in d['curves']:
    for p in c['points']:
        if p['cpus'] != n:
            continue
        holds = {}
        t = {False: [0, 0, 0.0], True: [0, 0, 0.0]}
        for h in p['hold_lines']:
            holds[h['site']] = h['holds']
            a = t[h['write']]
            a[0] += h['accesses']; a[1] += h['charged']; a[2] += h['ns']
        k = sum(holds.values())
        r, w = t[False], t[True]
        print(f"{c['design']:11} x{n}: {p['per_s']:8.0f} execs/s; per hold: reads {r[0]/k:5.2f} (charged {r[1]/k:5.2f}, {r[2]/k:5.0f} ns), "
              f"writes {w[0]/k:5.2f} (charged {w[1]/k:5.2f}, {w[2]/k:5.0f} ns); charged {(r[1]+w[1])/k:5.2f}, "
              f"{(r[2]+w[2])/max(r[1]+w[1],1):4.0f} ns each, {(r[2]+w[2])/k:5.0f} ns a hold")
