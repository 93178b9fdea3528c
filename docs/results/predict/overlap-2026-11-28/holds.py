import json,statistics
meas=json.load(open('/work/wt/predict/docs/results/device-16-survey/bench/results.json'))
def mh(d,t):
    v=[]
    for r in meas['runs']:
        if r['design']==d and r['threads']==t and r['call_pattern']=='per-vma' and r['workload']=='execl':
            h=sum(s['hold_ns_per_op'] for s in r['sites']); n=sum(s['holds_per_op'] for s in r['sites'])
            v.append(h/n if n else 0)
    return statistics.median(v)
def sh(o,d,t):
    c=[c for c in o['curves'] if c['design']==d][0]
    p=[p for p in c['points'] if p['cpus']==t][0]
    L=[l for l in p['locks'] if l['name'].startswith('map')]
    return sum(l['hold_ns'] for l in L)/sum(l['acquisitions'] for l in L)
S=json.load(open('model-serial.json')); O=json.load(open('model-overlap.json')); T=json.load(open('model-tree.json'))
print('| design | threads | measured mean hold (ns) | serial | overlap | overlap, tree serial |'); print('|---|---:|---:|---:|---:|---:|')
for d in ['linux','numa_locks','linux_shared_line','numa_split','aspace_central']:
    for t in [2,8,16]:
        m=mh(d,t); s=sh(S,d,t); o=sh(O,d,t); q=sh(T,d,t)
        print(f"| {d} | {t} | {m:.0f} | {s:.0f} ({s/m:.2f}x) | {o:.0f} ({o/m:.2f}x) | {q:.0f} ({q/m:.2f}x) |")
