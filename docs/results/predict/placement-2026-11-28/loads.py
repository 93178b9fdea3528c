#!/usr/bin/env python3
"""Per design, from the recorded profiles (slot 0): mean lines a hold
writes, of which tree / other, and how many of them the hold loaded first
(Hold.loaded_first), and lines only read. Usage: loads.py DIR"""
import json, os, sys
d = sys.argv[1]
print('| design | holds | written / hold | tree written | loaded first (all tree?) | read only |')
print('|---|---:|---:|---:|---:|---:|')
for f in ['linux_shared_line', 'linux', 'numa_split', 'numa_locks', 'sharded', 'aspace', 'aspace_central']:
    p = json.load(open(os.path.join(d, f + '.recorded.json')))
    kinds = p['lines']
    hs = [s['Hold'] for s in p['slots'][0]['steps'] if 'Hold' in s]
    n = len(hs)
    w = sum(len(h['written']) for h in hs) / n
    tw = sum(sum(1 for l in h['written'] if kinds[l] == 'Tree') for h in hs) / n
    lf = sum(len(h.get('loaded_first', [])) for h in hs) / n
    lft = all(kinds[l] == 'Tree' for h in hs for l in h.get('loaded_first', []))
    r = sum(len(h['read']) for h in hs) / n
    print(f"| {f} | {n} | {w:.1f} | {tw:.1f} | {lf:.1f} ({'yes' if lft else 'no'}) | {r:.1f} |")
