#!/usr/bin/env python3
"""Per design at one CPU count of a predict.json: execs/s and the simulated
mean hold per site (hold_ns / acquisitions). Usage: holds.py PREDICT_JSON CPUS"""
import json, sys

p = json.load(open(sys.argv[1]))
cpus = int(sys.argv[2])
for c in p['curves']:
    for pt in c['points']:
        if pt['cpus'] != cpus:
            continue
        a = sum(s['acquisitions'] for s in pt['sites'])
        h = sum(s['hold_ns'] for s in pt['sites'])
        per = ', '.join(f"{s['site']} {s['hold_ns'] / max(1, s['acquisitions']):.0f}" for s in pt['sites'])
        print(f"{c['design']:12} {cpus} CPUs {pt['per_s']:9.0f}/s  mean hold {h / a:6.0f} ns  ({per})")
