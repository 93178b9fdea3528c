#!/usr/bin/env python3
"""Mean hold over all maps' holds: the device's bench (per-site
hold_ns_per_op over holds_per_op, median sample) against each simulation
(the map locks' hold_ns over acquisitions). Usage:
holds.py BENCH_RESULTS_JSON LABEL PREDICT_JSON [LABEL PREDICT_JSON ...]"""
import json, statistics, sys
meas = json.load(open(sys.argv[1]))
def mh(d, t):
    v = []
    for r in meas['runs']:
        if r['design'] == d and r['threads'] == t and r['call_pattern'] == 'per-vma' and r['workload'] == 'execl':
            h = sum(s['hold_ns_per_op'] for s in r['sites']); n = sum(s['holds_per_op'] for s in r['sites'])
            v.append(h / n if n else 0)
    return statistics.median(v)
def sh(o, d, t):
    c = [c for c in o['curves'] if c['design'] == d][0]
    p = [p for p in c['points'] if p['cpus'] == t][0]
    L = [l for l in p['locks'] if l['name'].startswith('map')]
    return sum(l['hold_ns'] for l in L) / sum(l['acquisitions'] for l in L)
args = sys.argv[2:]
runs = [(args[i], json.load(open(args[i + 1]))) for i in range(0, len(args), 2)]
print('| design | threads | measured (ns) | ' + ' | '.join(l for l, _ in runs) + ' |')
print('|---|---:|---:|' + '---:|' * len(runs))
for d in ['linux', 'numa_locks', 'linux_shared_line', 'numa_split', 'aspace_central']:
    for t in [2, 8, 16]:
        m = mh(d, t)
        cells = [f"{sh(o, d, t):.0f} ({sh(o, d, t)/m:.2f}x)" for _, o in runs]
        print(f"| {d} | {t} | {m:.0f} | " + ' | '.join(cells) + ' |')
