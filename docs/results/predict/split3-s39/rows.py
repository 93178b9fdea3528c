import json,sys
runs=sys.argv[1:]
data=[json.load(open(f"{r}/validation.json"))['checks'] for r in runs]
print("| row | setting | published | " + " | ".join(runs) + " |")
print("|---|---|---|" + "---|"*len(runs))
for i,c in enumerate(data[0]):
    cells=[]
    for d in data:
        x=d[i]; assert x['what']==c['what'] and x['setting']==c['setting']
        cells.append(f"{x['predicted']:.3f}" + ("" if x['met'] else " (no)"))
    print(f"| {c['what']} | {c['setting']} | {c['published']} | " + " | ".join(cells) + " |")
print("| met | | | " + " | ".join(f"{sum(x['met'] for x in d)} of {len(d)}" for d in data) + " |")
