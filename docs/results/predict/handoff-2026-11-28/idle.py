"""The busiest lock of each lock-bound design in a prediction: holds a second,
simulated time held per hold (the hold, plus the unlock's queue walk with the
lock still held), and the time it sits idle per hold (1 / rate - held).
Usage: python3 idle.py [label=]predict.json ..."""
import json, sys, os
args = [a.split('=', 1) if '=' in a else [os.path.basename(os.path.dirname(a)), a] for a in sys.argv[1:]]
runs = [json.load(open(p)) for _, p in args]
names = [n for n, _ in args]
print('| design | threads | ' + ' | '.join(f'{n}: holds/s, held, idle (us)' for n in names) + ' |')
print('|---|---:|' + '---|' * len(runs))
for d in ['linux', 'numa_locks', 'aspace_central']:
    for t in [8, 12, 16]:
        cells = []
        for o in runs:
            c = [c for c in o['curves'] if c['design'] == d][0]
            p = [p for p in c['points'] if p['cpus'] == t][0]
            l = max(p['locks'], key=lambda l: l['acquisitions'])
            rate = l['acquisitions'] / o['seconds']
            held = l['hold_ns'] / l['acquisitions'] / 1e3
            cells.append(f"{rate/1e3:.0f}k, {held:.2f}, {1e6/rate - held:.2f}")
        print(f'| {d} | {t} | ' + ' | '.join(cells) + ' |')
