#!/usr/bin/env python3
"""sweep.py REC OUTROOT B: re-simulate REC's saved recordings at 2 CPUs on host.json
with every recorded time scaled by 1/(1+e) (recorded_ghz x (1+e)); prints per-design execs/s."""
import json, os, subprocess, sys, shutil
rec, root, b = sys.argv[1], sys.argv[2], sys.argv[3]
designs = sys.argv[4] if len(sys.argv) > 4 else "linux,aspace,aspace_central"
eps = [float(x) for x in (sys.argv[5] if len(sys.argv) > 5 else "-0.02,-0.01,-0.005,-0.002,0,0.002,0.005,0.01,0.02").split(",")]
for e in eps:
    d = os.path.join(root, f"e{e:+.3f}")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(rec):
        if f.endswith(".recorded.json"):
            p = json.load(open(os.path.join(rec, f)))
            p["recorded_ghz"] *= (1 + e)
            json.dump(p, open(os.path.join(d, f), "w"))
    out = subprocess.run(["nice", "-n", "10", b, "predict", "--machine", "docs/results/predict/host.json",
        "--model-cost", "--profiles", d, "--cpus", "2", "--designs", designs, "--busy-ok", "--out", d + "/out"],
        capture_output=True, text=True, cwd="/work/wt/s39-bistable")
    pj = json.load(open(d + "/out/predict.json"))
    row = []
    for c in pj.get("curves", pj.get("designs", [])):
        row.append(c)
    print(f"e={e:+.3f}", out.returncode, flush=True)
    for line in out.stdout.splitlines():
        if line.split() and line.split()[0] in designs.split(",") and len(line.split()) > 2 and line.split()[1] == "2":
            print("   ", line[:110], flush=True)
