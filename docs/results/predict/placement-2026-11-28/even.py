#!/usr/bin/env python3
"""Copies a folder of <design>.recorded.json with each slot's work spread
evenly over its gaps (every Work step the slot's mean work step), as the
recorder did before s37, and work_placed false: the A/B of the placement
on one recording. Usage: even.py FROM_DIR TO_DIR"""
import json, os, sys

src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for f in sorted(os.listdir(src)):
    if not f.endswith('.recorded.json'):
        continue
    p = json.load(open(os.path.join(src, f)))
    for s in p['slots']:
        w = [st['Work'] for st in s['steps'] if 'Work' in st]
        mean = sum(w) / len(w)
        s['steps'] = [{'Work': mean} if 'Work' in st else st for st in s['steps']]
    p['work_placed'] = False
    json.dump(p, open(os.path.join(dst, f), 'w'))
    print(f, 'work steps per slot', len(w), 'mean', round(mean, 1))
