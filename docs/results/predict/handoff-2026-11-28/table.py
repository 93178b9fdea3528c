import json,sys,statistics
meas=json.load(open('/work/wt/s37-handoff/docs/results/device-16-survey/bench/results.json'))
def m(design,t):
    v=[r['ops_per_sec'] for r in meas['runs'] if r['design']==design and r['threads']==t and r['call_pattern']=='per-vma' and r['workload']=='execl']
    return statistics.median(v)
def k(x): return f"{x/1000:.1f}k"
o=json.load(open(sys.argv[1]))
order=['linux_shared_line','linux','numa_split','numa_locks','sharded','aspace','aspace_central']
inside=0;tot=0
print('| design | 1 | 2 | 4 | 8 | 12 | 16 |'); print('|---|---|---|---|---|---|---|')
for d in order:
    c=[c for c in o['curves'] if c['design']==d][0]
    cells=[]
    for p in c['points']:
        me=m(d,p['cpus']); e=p['per_s']/me-1; tot+=1
        ok=abs(e)<=0.25; inside+=ok
        s=f"{k(p['per_s'])} / {k(me)} ({e*100:+.0f}%)"
        cells.append(s if ok else s.replace('(','(**').replace(')','**)'))
    print(f"| {d} | "+" | ".join(cells)+" |")
print(f"within 25%: {inside} of {tot}")
