#!/usr/bin/env python3
"""Bench / real ratios of paired.tsv: each bench run over the mean of the two
real runs around it (the one before in the same round, the one after; the last
old bench has only the one before). Prints per bench and thread count the
median ratio, its min-max, the medians of the rates and the load range."""
import statistics as st, sys
rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])][1:]
rows = [r for r in rows if r[3]]
v = {}
for r, what, n, x, load, _ in rows:
    v[(int(r), what, int(n))] = (float(x), float(load))
rounds = sorted({k[0] for k in v})
for b, around in [('bench-new', lambda r: [(r, 'real-a'), (r, 'real-b')]),
                  ('bench-old', lambda r: [(r, 'real-b'), (r + 1, 'real-a')])]:
    for n in (1, 2):
        ratios, bench, real, loads = [], [], [], []
        for r in rounds:
            if (r, b, n) not in v:
                continue
            rs = [v[(rr, w, n)][0] for rr, w in around(r) if (rr, w, n) in v]
            if not rs:
                continue
            x, l = v[(r, b, n)]
            ratios.append(x / st.mean(rs)); bench.append(x); loads.append(l)
        real = [v[k][0] for k in v if k[1].startswith('real') and k[2] == n]
        print(f"{b}\t{n}\tratio median {st.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}] of {len(ratios)}"
              f"\tbench median {st.median(bench):.0f}\treal median {st.median(real):.0f} ({len(real)} runs)"
              f"\tmedian/median {st.median(bench)/st.median(real):.3f}\tload {min(loads):.1f}-{max(loads):.1f}")
