#!/usr/bin/env python3
"""Adds the kernel split holds' own-line work to saved profiles (`aspace
predict --save-profiles DIR`'s <design>.recorded.json, made by a binary
before s38), as s38's recorder does: every Split hold + STORE ns, every
ProtectSplit hold + STORE + ANON ns (host ns, as recorded). The work steps
are left alone: with the kernel cost `--profiles` stretches the work to the
real exec's cost anyway. Usage: own_work.py IN_DIR OUT_DIR [STORE ANON]
(default 150 30: the final binary's hygon-384 recordings measured 143-156
and 30-31 on this host, 2026-11-28 14:02)."""
import json, os, sys

src, dst = sys.argv[1], sys.argv[2]
store = float(sys.argv[3]) if len(sys.argv) > 3 else 150.0
anon = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
os.makedirs(dst, exist_ok=True)
for f in sorted(os.listdir(src)):
    if not f.endswith('.recorded.json'):
        continue
    p = json.load(open(os.path.join(src, f)))
    for s in p['slots']:
        for st in s['steps']:
            h = st.get('Hold')
            if h is None:
                continue
            if h['site'] == 'Split':
                h['hold_ns'] += store
            elif h['site'] == 'ProtectSplit':
                h['hold_ns'] += store + anon
    json.dump(p, open(os.path.join(dst, f), 'w'))
