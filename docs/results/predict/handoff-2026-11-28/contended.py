"""Contended share of acquisitions: the device's bench (median of its samples)
against each prediction's `contended_pct` (the simulated bench's count).
Usage: python3 contended.py [label=]predict.json ..."""
import json, statistics, sys, os
here = os.path.dirname(os.path.abspath(__file__))
meas = json.load(open(os.path.join(here, '../../device-16-survey/bench/results.json')))
def dev(d, t):
    v = [r['contended_pct'] for r in meas['runs'] if r['design'] == d and r['threads'] == t
         and r['call_pattern'] == 'per-vma' and r['workload'] == 'execl']
    return statistics.median(v)
args = [a.split('=', 1) if '=' in a else [os.path.basename(os.path.dirname(a)), a] for a in sys.argv[1:]]
runs = [json.load(open(p)) for _, p in args]
order = ['linux_shared_line', 'linux', 'numa_split', 'numa_locks', 'sharded', 'aspace', 'aspace_central']
print('| design | threads | device | ' + ' | '.join(n for n, _ in args) + ' |')
print('|---|---:|---:|' + '---:|' * len(runs))
for d in order:
    for t in [2, 8, 12, 16]:
        cells = []
        for o in runs:
            c = [c for c in o['curves'] if c['design'] == d][0]
            p = [p for p in c['points'] if p['cpus'] == t][0]
            cells.append(f"{p['contended_pct']:.1f}")
        print(f"| {d} | {t} | {dev(d, t):.1f} | " + ' | '.join(cells) + ' |')
