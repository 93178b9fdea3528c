#!/usr/bin/env python3
"""holds.py FILE...: per slot: holds, sum hold_ns, sum work, max work step, max hold; top 5 holds."""
import json, sys
for f in sys.argv[1:]:
    p = json.load(open(f))
    print(f, "ghz %.3f" % p["recorded_ghz"])
    for si, s in enumerate(p["slots"]):
        hs = [st["Hold"]["hold_ns"] for st in s["steps"] if "Hold" in st]
        ws = [st["Work"] for st in s["steps"] if "Work" in st]
        print("  slot %d: %d holds, hold sum %.0f ns (max %.0f), work sum %.0f ns in %d steps (max %.0f)" % (
            si, len(hs), sum(hs), max(hs) if hs else 0, sum(ws), len(ws), max(ws) if ws else 0))
        print("     top holds:", sorted([round(h) for h in hs])[-5:], " top work:", sorted([round(w) for w in ws])[-5:])
