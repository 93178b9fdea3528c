#!/usr/bin/env python3
"""Per design, call site, kind of line and read/write: the line accesses
inside holds of an `aspace predict` run (predict.json's `hold_lines`, a
diagnostic of the simulator), per hold: accesses, charged transfers,
their ns, ns per charged transfer. Usage: hold_lines.py PREDICT_JSON [CPUS]"""
import json, sys

d = json.load(open(sys.argv[1]))
want = int(sys.argv[2]) if len(sys.argv) > 2 else None


def points(o):
    if isinstance(o, dict):
        if 'hold_lines' in o and 'cpus' in o:
            yield o
        for v in o.values():
            yield from points(v)
    elif isinstance(o, list):
        for v in o:
            yield from points(v)


for c in d['curves']:
    for p in c['points']:
        if want and p['cpus'] != want:
            continue
        print(f"{c['design']} x{p['cpus']}: {p['per_s']:.0f} execs/s")
        print(f"  {'site':15}{'kind':10}{'r/w':4}{'holds':>9}{'acc/hold':>9}{'charged/hold':>13}{'ns/hold':>9}{'ns/charged':>11}")
        tot = {}
        for h in p.get('hold_lines', []):
            n = max(h['holds'], 1)
            rw = 'w' if h['write'] else 'r'
            per = h['ns'] / h['charged'] if h['charged'] else 0
            print(f"  {h['site']:15}{h['kind']:10}{rw:4}{h['holds']:9}{h['accesses']/n:9.2f}{h['charged']/n:13.2f}{h['ns']/n:9.0f}{per:11.0f}")
        iters = p['per_s']
