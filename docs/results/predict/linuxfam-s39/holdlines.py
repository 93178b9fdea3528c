"""Per call site, the line accesses inside holds (predict.json's hold_lines diagnostic):
per hold, accesses and charged transfers and their ns, by kind and read/write.
Usage: holdlines.py PREDICT_JSON DESIGN CPUS"""
import json, sys
p = json.load(open(sys.argv[1])); d = sys.argv[2]; n = int(sys.argv[3])
for c in p['curves']:
    if c['design'] != d: continue
    for pt in c['points']:
        if pt['cpus'] != n: continue
        for h in pt.get('hold_lines', []):
            k = h['holds'] or 1
            print('%-15s %-9s %-5s acc %5.1f charged %5.1f ns %6.0f' % (
                h['site'], h['kind'], 'write' if h['write'] else 'read',
                h['accesses'] / k, h['charged'] / k, h['ns'] / k))
