#!/usr/bin/env python3
"""Offline decomposition of the transfers charged to each hold of a recorded
profile at N CPUs (CPU c runs slot c), with the serial charging rules of
crates/predict/src/sim/lines.rs (no busy-line queueing, no lock-word
polling: only which accesses pay a transfer). Locks serialise holds.
Usage: decompose.py PROFILE [CPUS] [ROUNDS]"""
import json, sys, heapq, collections
prof = json.load(open(sys.argv[1]))
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
lockline = {i: l['line'] for i, l in enumerate(prof['locks'])}
last = {}      # line -> (cpu, site, step)
sharers = collections.defaultdict(set)
stats = collections.defaultdict(lambda: collections.Counter())
src = collections.defaultdict(collections.Counter)
dist = collections.defaultdict(collections.Counter)
lock_free = collections.defaultdict(float)
ev = [(0.0, c, 0, 0) for c in range(N)]  # time, cpu, step, round
heapq.heapify(ev)
while ev:
    t, c, j, r = heapq.heappop(ev)
    steps = prof['slots'][c]['steps']
    if j == len(steps):
        r += 1; j = 0
        if r >= ROUNDS: continue
    st = steps[j]
    if 'Work' in st:
        heapq.heappush(ev, (t + st['Work'], c, j + 1, r)); continue
    if 'Touch' in st:
        heapq.heappush(ev, (t, c, j + 1, r)); continue
    h = st['Hold']; L = h['lock']
    if lock_free[L] > t:
        heapq.heappush(ev, (lock_free[L], c, j, r)); continue
    ll = lockline[L]; site = h['site']
    key = (site, L, j) if site == 'ExitUnlink' else (site,)
    warm = r >= 2
    lf = set(h.get('loaded_first', []))
    wr = [l for l in h['written'] if l != ll]
    rd = [l for l in h['read'] if l != ll]
    if warm: stats[key]['holds'] += 1
    for l in wr:
        cls = 'w_loaded' if l in lf else 'w_other'
        lw = last.get(l)
        paid = (lw is not None and lw[0] != c) or bool(sharers[l] - {c})
        if warm:
            stats[key][cls] += 1
            if paid:
                stats[key][cls + '_paid'] += 1
                src[key][(lw[1], 'own' if lw[0] == c else 'other') if lw else ('sharer', '')] += 1
        last[l] = (c, site, j); sharers[l] = set()
    for l in rd:
        lw = last.get(l)
        paid = lw is not None and lw[0] != c and c not in sharers[l]
        if warm:
            stats[key]['read'] += 1
            if paid:
                stats[key]['read_paid'] += 1
                src[key][(lw[1], 'r')] += 1
        if lw is not None and lw[0] != c: sharers[l].add(c)
    dur = h['hold_ns']
    lock_free[L] = t + dur
    heapq.heappush(ev, (t + dur, c, j + 1, r))
LAT=65.46715
def ns(key, s, drop_reads=False, overlap_other=False):
    n=s['holds']; p=s['w_loaded_paid']+(0 if drop_reads else s['read_paid'])
    p+= (min(s['w_other_paid'], n) if overlap_other else s['w_other_paid'])
    return p/n*LAT
ex=[(k,s) for k,s in stats.items() if k[0]=='ExitUnlink' and s['holds']]
hn={ (h['site'],h['lock'],j) if h['site']=='ExitUnlink' else None: h['hold_ns'] for j,st in enumerate(prof['slots'][0]['steps']) if 'Hold' in st for h in [st['Hold']]}
for dr,ov,lab in [(0,0,'serial (as charged)'),(1,0,'exit read-only lines dropped'),(0,1,'unloaded writes overlapped (1 transfer/hold)'),(1,1,'both')]:
    m=sum(hn.get(k,0)+ns(k,s,dr,ov) for k,s in ex)/len(ex)
    print(f"mean exit hold, {lab}: {m:6.0f} ns")
print(f"{N} CPUs, slots 0..{N-1}, rounds {ROUNDS} (first 2 skipped)")
for key, s in sorted(stats.items(), key=lambda kv: str(kv[0])):
    n = s['holds']
    if not n: continue
    f = lambda k: s[k] / n
    print(f"{str(key):28} holds {n:6}  w_loaded {f('w_loaded'):5.1f} paid {f('w_loaded_paid'):5.1f} | w_other {f('w_other'):5.1f} paid {f('w_other_paid'):5.1f} | read {f('read'):5.1f} paid {f('read_paid'):5.1f} | paid/hold {(s['w_loaded_paid']+s['w_other_paid']+s['read_paid'])/n:5.1f}")
    if key[0] == 'ExitUnlink':
        tot = sum(src[key].values())
        print('    last writers of paid lines:', ', '.join(f"{k[0]}/{k[1]} {v/n:.1f}" for k, v in src[key].most_common(6)))
