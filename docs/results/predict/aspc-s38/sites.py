"""Per call site: the simulated mean hold (the lock held: the hold, its line transfers, the
 counters and, on a release with sleepers, the queue walk) and wait, against the device bench's
 mean_hold_ns (the bench times from after the acquisition to just before the release).
 Usage: sites.py BENCH_RESULTS_JSON PREDICT_JSON DESIGN[,DESIGN...]"""
import json,sys,statistics
meas=json.load(open(sys.argv[1])); pred=json.load(open(sys.argv[2])); designs=sys.argv[3].split(',')
def dev(design,t):
    rs=[r for r in meas['runs'] if r['design']==design and r['threads']==t and r.get('call_pattern')=='per-vma']
    rs.sort(key=lambda r:r['ops_per_sec']); r=rs[(len(rs)-1)//2]
    return r
for c in pred['curves']:
    if c['design'] not in designs: continue
    for p in c['points']:
        t=p['cpus']; r=dev(c['design'],t)
        ds={s['site']:s for s in r['sites']}
        ss={}
        for s in p['sites']:
            k='split' if s['site']=='protect_split' else s['site']
            a=ss.setdefault(k,[0,0,0,0]); a[0]+=s['acquisitions']; a[1]+=s['hold_ns']; a[2]+=s['spin_ns']; a[3]+=s['sleep_ns']
        row=[]
        for k,(n,h,sp,sl) in ss.items():
            d=ds.get(k)
            row.append('%s sim %.0f (w %.0f) dev %.0f'%(k[:6],h/n,(sp+sl)/n,d['mean_hold_ns'] if d else -1))
        print(c['design'][:10],t,'%.1fk/%.1fk'%(p['per_s']/1e3,r['ops_per_sec']/1e3),' | '.join(row))
