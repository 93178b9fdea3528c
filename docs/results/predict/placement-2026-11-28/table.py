#!/usr/bin/env python3
"""PREDICTED / measured tables for predict.json files against the device's
bench (per-vma execl, median of the samples), as the s35/s36 tables, and
the contended share of all acquisitions (the simulation's `contended_pct`
against the bench's `contended_pct`, median sample). Usage:
table.py BENCH_RESULTS_JSON LABEL PREDICT_JSON [LABEL PREDICT_JSON ...]"""
import json, statistics, sys

meas = json.load(open(sys.argv[1]))
def runs(d, t):
    return [r for r in meas['runs'] if r['design'] == d and r['threads'] == t
            and r['call_pattern'] == 'per-vma' and r['workload'] == 'execl']
def m(d, t):
    return statistics.median(r['ops_per_sec'] for r in runs(d, t))
def mc(d, t):
    return statistics.median(r['contended_pct'] for r in runs(d, t))
def k(x):
    return f"{x/1000:.1f}k"
order = ['linux_shared_line', 'linux', 'numa_split', 'numa_locks', 'sharded', 'aspace', 'aspace_central']
args = sys.argv[2:]
pairs = [(args[i], args[i + 1]) for i in range(0, len(args), 2)]
summary = []
for label, f in pairs:
    o = json.load(open(f))
    inside = tot = 0
    misses = []
    print(f"\n#### {label} (`{f}`)\n")
    print('| design | 1 | 2 | 4 | 8 | 12 | 16 |')
    print('|---|---|---|---|---|---|---|')
    for d in order:
        c = [c for c in o['curves'] if c['design'] == d][0]
        cells = []
        for p in c['points']:
            me = m(d, p['cpus']); e = p['per_s'] / me - 1; tot += 1
            ok = abs(e) <= 0.25; inside += ok
            if not ok:
                misses.append(f"{d} {p['cpus']} ({e*100:+.0f}%)")
            s = f"{k(p['per_s'])} / {k(me)} ({e*100:+.0f}%)"
            cells.append(s if ok else s.replace('(', '(**').replace(')', '**)'))
        print(f"| {d} | " + " | ".join(cells) + " |")
    print(f"\nwithin 25%: {inside} of {tot}; misses: {', '.join(misses) or 'none'}")
    print('\ncontended share of all acquisitions, simulated / device (median sample):\n')
    print('| design | 2 | 4 | 8 | 12 | 16 |')
    print('|---|---|---|---|---|---|')
    for d in order:
        c = [c for c in o['curves'] if c['design'] == d][0]
        cells = [f"{p['contended_pct']:.0f}% / {mc(d, p['cpus']):.0f}%" for p in c['points'] if p['cpus'] > 1]
        print(f"| {d} | " + " | ".join(cells) + " |")
    summary.append((label, inside, tot, misses))
print('\n| run | within 25% | misses |')
print('|---|---|---|')
for label, inside, tot, misses in summary:
    print(f"| {label} | {inside} / {tot} | {', '.join(misses) or 'none'} |")
