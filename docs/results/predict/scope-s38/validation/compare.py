import json,sys
runs=[(n,json.load(open(f'/tmp/s38-scope-val-{n}/validation.json'))) for n in sys.argv[1:]]
hdr='| row | setting | published | '+' | '.join(n for n,_ in runs)+' |'
print(hdr); print('|'+'---|'*(3+len(runs)))
for i,c in enumerate(runs[0][1]['checks']):
    cells=[]
    for n,r in runs:
        d=r['checks'][i]
        cells.append(f"{d['predicted']:.3f}{'' if d['met'] else ' (no)'}")
    print(f"| {c['what']} | {c['setting']} | {c.get('published','')} | "+' | '.join(cells)+' |')
print('| met | | | '+' | '.join(str(sum(d['met'] for d in r['checks']))+' of '+str(len(r['checks'])) for n,r in runs)+' |')
