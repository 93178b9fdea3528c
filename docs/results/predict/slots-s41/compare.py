#!/usr/bin/env python3
"""s41 slots experiment: each cut-n run (n-slot recording, simulated at n)
and the 16-slot fresh recording (final-s41/model-fresh) against the
device's bench (per-vma execl, median). Run from the repository root."""
import json, statistics
R = 'docs/results/predict/'
meas = json.load(open(R + '../device-16-survey/bench/results.json'))
def m(d, t):
    return statistics.median(r['ops_per_sec'] for r in meas['runs'] if r['design'] == d and r['threads'] == t
                             and r['call_pattern'] == 'per-vma' and r['workload'] == 'execl')
fresh = json.load(open(R + 'final-s41/model-fresh/predict.json'))
order = ['linux_shared_line', 'linux', 'numa_split', 'numa_locks', 'sharded', 'aspace', 'aspace_central']
def pt(o, d, n):
    c = [c for c in o['curves'] if c['design'] == d][0]
    return [p for p in c['points'] if p['cpus'] == n][0]['per_s']
ns = (1, 2, 4, 8, 12)
cuts = {n: json.load(open(R + f'slots-s41/cut{n}/predict.json')) for n in ns}
print('| design | threads | 16-slot recording | n-slot recording | measured |')
print('|---|---|---|---|---|')
ins16 = insn = tot = 0; e16 = en = 0.0
for d in order:
    for n in ns:
        me = m(d, n); a = pt(fresh, d, n) / me - 1; b = pt(cuts[n], d, n) / me - 1
        tot += 1; ins16 += abs(a) <= .25; insn += abs(b) <= .25; e16 += abs(a); en += abs(b)
        print(f'| {d} | {n} | {a*100:+.0f}% | {b*100:+.0f}% | {me/1000:.1f}k |')
print(f'\nwithin 25%: 16-slot {ins16}, n-slot {insn} of {tot}; summed absolute error {e16*100:.0f} / {en*100:.0f} points')
