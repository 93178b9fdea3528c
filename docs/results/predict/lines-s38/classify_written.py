import json, sys
from collections import defaultdict, Counter
for d in ['linux','numa_split']:
    p=json.load(open(f'{d}.recorded.json'))
    writers=defaultdict(set); holds_on=Counter(); wcount=Counter()
    for s in p['slots']:
        for st in s['steps']:
            h=st.get('Hold')
            if not h: continue
            holds_on[h['lock']]+=1
            for l in h['written']:
                writers[l].add(s['cpu']); wcount[(h['lock'],l)]+=1
    hdr={l for (lk,l),n in wcount.items() if n>=0.5*holds_on[lk]}
    print(d,'header-like lines',len(hdr), 'holds per lock', dict(holds_on))
    acc=defaultdict(Counter); n=Counter()
    for s in p['slots']:
        for st in s['steps']:
            h=st.get('Hold')
            if not h: continue
            site=h['site']; n[site]+=1
            lf=set(h.get('loaded_first',[]))
            for l in h['written']:
                if l in hdr: k='hdr'
                elif l in lf: k='w_loaded'
                else: k='w_new'
                acc[site][k]+=1
                acc[site][k+'_writers']+=len(writers[l])
                acc[site][k+'_1slot']+= len(writers[l])==1
            for l in h['read']:
                acc[site]['read']+=1
    for site in sorted(n):
        a=acc[site]; k=n[site]
        print(f"  {site:14}", ' '.join(f"{x}={a[x]/k:.2f}" for x in ['hdr','w_loaded','w_new','read']),
              ' mean writers/line:', ' '.join(f"{x}={a[x+'_writers']/max(a[x],1):.1f}" for x in ['hdr','w_loaded','w_new']),
              ' 1-slot share:', ' '.join(f"{x}={a[x+'_1slot']/max(a[x],1):.2f}" for x in ['w_loaded','w_new']))
