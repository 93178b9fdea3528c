"""The saved recording's times with another recording's lines.

Usage: hybrid.py OLD_DIR NEW_DIR OUT_DIR
For each <design>.recorded.json in both: OLD's profile (hold times, work
between holds, placements, everything timed) with NEW's line table, locks'
lines and each hold's written / read / loaded_first lines, hold by hold
(same slot, same position, same lock name and site; anything else is refused).
So a change of the recorder's line rule is simulated on one set of times."""
import json, os, sys

old_dir, new_dir, out_dir = sys.argv[1:4]
os.makedirs(out_dir, exist_ok=True)
for f in sorted(os.listdir(old_dir)):
    if not f.endswith('.recorded.json') or not os.path.exists(os.path.join(new_dir, f)):
        continue
    o = json.load(open(os.path.join(old_dir, f)))
    n = json.load(open(os.path.join(new_dir, f)))
    oname = [l['name'] for l in o['locks']]
    nname = [l['name'] for l in n['locks']]
    if sorted(oname) != sorted(nname):
        sys.exit(f'{f}: locks differ: {oname} / {nname}')
    # Lock indices by name (the order of first use may differ).
    remap = {i: oname.index(nm) for i, nm in enumerate(nname)}
    nline = {nm: l['line'] for nm, l in zip(nname, n['locks'])}
    o['lines'] = n['lines']
    for l in o['locks']:
        l['line'] = nline[l['name']]
    if len(o['slots']) != len(n['slots']):
        sys.exit(f'{f}: slots differ')
    for so, sn in zip(o['slots'], n['slots']):
        ho = [st['Hold'] for st in so['steps'] if 'Hold' in st]
        hn = [st['Hold'] for st in sn['steps'] if 'Hold' in st]
        if len(ho) != len(hn) or any(
                a['site'] != b['site'] or a['lock'] != remap[b['lock']] for a, b in zip(ho, hn)):
            sys.exit(f'{f}: slot {so["cpu"]}: holds differ')
        if any('Touch' in st for st in so['steps'] + sn['steps']):
            sys.exit(f'{f}: touches not handled')
        for a, b in zip(ho, hn):
            for k in ('written', 'read', 'loaded_first'):
                a[k] = b.get(k, [])
    o['notes'] = o.get('notes', '') + f'; lines from {new_dir} (hybrid.py)'
    json.dump(o, open(os.path.join(out_dir, f), 'w'))
    print(f, 'ok')
