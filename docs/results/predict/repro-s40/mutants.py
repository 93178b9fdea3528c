#!/usr/bin/env python3
"""s40-repro mutants: each one patch, the named tests run, the patch reverted.
Run from the repository root: python3 docs/results/predict/repro-s40/mutants.py"""
import subprocess, sys
K = 'crates/lab/src/predict/kernel.rs'
P = 'crates/lab/src/predict.rs'
W = 'crates/lab/src/workload.rs'
R = 'crates/lab/src/predict/recorder.rs'
MUTANTS = [
    ("loader ignores the saved exec measurement", K,
     "    if !f.exists() {\n        return Ok(None);\n    }",
     "    if f.exists() {\n        return Ok(None);\n    }",
     "saved_profiles_predict_the_same_twice"),
    ("save_profiles does not write the exec measurement", P,
     "        kernel::save_exec_share(dir, plan.exec_share()?)\n",
     "        plan.exec_share().map(|_| ())\n",
     "saved_profiles_predict_the_same_twice"),
    ("bench: release touched before the exit", W,
     "        exit();\n        self.touch(&self.touches.release);",
     "        self.touch(&self.touches.release);\n        exit();",
     "the_bench_touches_the_lines_the_prediction_places"),
    ("bench: start phase left out", W,
     "        self.touch(&self.touches.start);\n", "",
     "the_bench_touches_the_lines_the_prediction_places"),
    ("bench: map chunks cut at 7 (a chunk lost)", W,
     "        for _ in 0..SPIN_CHUNKS {", "        for _ in 0..SPIN_CHUNKS - 1 {",
     "the_bench_touches_the_lines_the_prediction_places"),
    ("bench: no kernel-shaped splits", W,
     "    files.set_kernel_split_holds(p.kernel.is_some());",
     "    files.set_kernel_split_holds(false);",
     "the_kernel_cost_bench_splits_as_the_kernel_does"),
    ("recorder ignores kernel_splits", R,
     "cfg.cost == Cost::Kernel || cfg.kernel_splits", "cfg.cost == Cost::Kernel",
     "only_kernel_cost_recordings_make_kernel_split_holds"),
]
bad = 0
for name, f, old, new, test in MUTANTS:
    src = open(f).read()
    assert src.count(old) == 1, (name, src.count(old))
    open(f, 'w').write(src.replace(old, new))
    try:
        r = subprocess.run(['nice', '-n', '10', 'cargo', 'test', '-q', '-p', 'aspace-lab', '--bins', '--', test],
                           capture_output=True, text=True)
    finally:
        open(f, 'w').write(src)
    out = r.stdout + r.stderr
    caught = r.returncode != 0 and 'error[' not in out
    bad += not caught
    print(f"{'CAUGHT' if caught else 'MISSED'}\t{name}\t{test}\trc={r.returncode}" + ("" if 'error[' not in out else "\tBUILD ERROR"), flush=True)
sys.exit(bad)
