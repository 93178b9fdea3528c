#!/usr/bin/env python3
"""sweep_hold.py REC OUTROOT B DESIGNS FACTORS: scale every hold's hold_ns by f and the work
steps down so that each slot's iteration (holds + work) is unchanged; simulate 2 CPUs on host.json."""
import json, os, subprocess, sys
rec, root, b, designs = sys.argv[1:5]
fs = [float(x) for x in sys.argv[5].split(",")]
for f in fs:
    d = os.path.join(root, f"h{f:.2f}")
    os.makedirs(d, exist_ok=True)
    for fn in os.listdir(rec):
        if not fn.endswith(".recorded.json"):
            continue
        p = json.load(open(os.path.join(rec, fn)))
        for s in p["slots"]:
            hs = sum(st["Hold"]["hold_ns"] for st in s["steps"] if "Hold" in st)
            ws = sum(st["Work"] for st in s["steps"] if "Work" in st)
            k = max(0.0, (ws - (f - 1) * hs) / ws) if ws > 0 else 0.0
            for st in s["steps"]:
                if "Hold" in st:
                    st["Hold"]["hold_ns"] *= f
                elif "Work" in st:
                    st["Work"] *= k
        json.dump(p, open(os.path.join(d, fn), "w"))
    out = subprocess.run(["nice", "-n", "10", b, "predict", "--machine", "docs/results/predict/host.json",
        "--model-cost", "--profiles", d, "--cpus", "1,2", "--designs", designs, "--busy-ok", "--out", d + "/out"],
        capture_output=True, text=True, cwd="/work/wt/s39-bistable")
    print(f"hold x{f:.2f} rc={out.returncode}", flush=True)
    for line in out.stdout.splitlines():
        w = line.split()
        if w and w[0] in designs.split(",") and len(w) > 8:
            print("   ", " ".join(w[:3] + w[6:9]), flush=True)
