import json,sys,collections
p=json.load(open(sys.argv[1]))
kinds=p['lines']
agg=collections.defaultdict(lambda:[0,0,0,0,0,0])
for s in p['slots']:
  for st in s['steps']:
    if 'Hold' in st:
      h=st['Hold']; a=agg[(h['site'],h['lock'])]
      a[0]+=1;a[1]+=h['hold_ns'];a[2]+=len(h['written']);a[3]+=len(h['read']);a[4]+=len(h['loaded_first'])
      a[5]+=sum(1 for l in h['written'] if kinds[l]=='Counter')
for k,a in sorted(agg.items()):
  n=a[0]; print('%-14s lock%d holds %4d hold_ns %6.0f written %5.1f (counters %.1f) read %5.1f loaded_first %5.1f'%(k[0],k[1],n,a[1]/n,a[2]/n,a[5]/n,a[3]/n,a[4]/n))
print(p['exit_vmas_per_hold'], len(p['slots']))
