import json,sys,collections
p=json.load(open(sys.argv[1])); lock=int(sys.argv[2])
kinds=p['lines']
def holds(s): return [st['Hold'] for st in p['slots'][s]['steps'] if 'Hold' in st]
S=len(p['slots'])
writers=collections.defaultdict(set)
for s in range(S):
  for h in holds(s):
    for l in h['written']: writers[l].add(s)
tot=collections.Counter()
for s in range(S):
  hs=holds(s)
  ex=[h for h in hs if h['site']=='ExitUnlink' and h['lock']==lock]
  own=set()
  for h in hs:
    if h['site']!='ExitUnlink': own|=set(h['written'])
  for h in ex:
    w=[l for l in h['written'] if kinds[l]=='Tree']
    tot['holds']+=1; tot['w']+=len(w)
    tot['w_by_self_elsewhere']+=sum(1 for l in w if l in own)
    tot['w_nwriters']+=sum(len(writers[l]) for l in w)
    tot['w_only_self']+=sum(1 for l in w if writers[l]=={s})
for k,v in tot.items(): print(k, v/tot['holds'] if k!='holds' else v)
