#!/usr/bin/env python3
"""The busiest lock's mean held time per acquisition (simulated) and the
rate, per design and CPU count, for predict.json files. Usage:
holds.py LABEL PREDICT_JSON [LABEL PREDICT_JSON ...]"""
import json, sys

designs = ['linux', 'numa_locks', 'aspace_central']
args = sys.argv[1:]
runs = [(args[i], json.load(open(args[i + 1]))) for i in range(0, len(args), 2)]
print('| design | CPUs | ' + ' | '.join(f'{l}: execs/s, busiest lock, held ns/acq' for l, _ in runs) + ' |')
print('|---|---|' + '---|' * len(runs))
for d in designs:
    for n in (2, 4, 8, 16):
        cells = []
        for _, o in runs:
            c = next(c for c in o['curves'] if c['design'] == d)
            p = next(p for p in c['points'] if p['cpus'] == n)
            l = max(p['locks'], key=lambda l: l['hold_ns'])
            cells.append(f"{p['per_s']/1000:.1f}k, {l['name']}, {l['hold_ns']/l['acquisitions']:.0f}")
        print(f'| {d} | {n} | ' + ' | '.join(cells) + ' |')
