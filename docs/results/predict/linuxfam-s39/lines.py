"""Per (lock, call site), per hold: tree lines written, read, written-and-loaded-first, over all
slots of a recorded profile. Usage: lines.py RECORDED_JSON [RECORDED_JSON ...]"""
import json, sys, collections
for f in sys.argv[1:]:
    p = json.load(open(f)); kinds = p['lines']
    agg = collections.defaultdict(lambda: [0, 0, 0, 0])
    names = [l['name'] for l in p['locks']]
    for s in p['slots']:
        for st in s['steps']:
            if 'Hold' in st:
                h = st['Hold']; a = agg[(names[h['lock']], h['site'])]
                a[0] += 1; a[1] += sum(kinds[i] == 'Tree' for i in h['written'])
                a[2] += len(h['read']); a[3] += len(h.get('loaded_first', []))
    print(f)
    tot = [0, 0, 0]
    for k in sorted(agg):
        a = agg[k]; n = len(p['slots'])
        print('  %-8s %-14s per exec %4.1f  tree written %5.1f  read %5.1f  loaded first %5.1f' % (
            k[0], k[1], a[0] / n, a[1] / a[0], a[2] / a[0], a[3] / a[0]))
        tot[0] += a[1] / n; tot[1] += a[2] / n; tot[2] += a[0] / n
    print('  per exec: %.0f tree lines written, %.0f read, in %.0f holds' % tuple(tot))
