#!/usr/bin/env python3
"""Hand-applied mutants of s39-label's rules; each must make predict::tests fail."""
import subprocess, sys, datetime
W = '/work/wt/s39-label'
F = W + '/crates/lab/src/predict.rs'
M = [
 ("no upper band", "if x >= line * (1.0 + RUN_TO_RUN) {", "if x >= line {"),
 ("no lower band", "} else if x < line / (1.0 + RUN_TO_RUN) {", "} else if x < line {"),
 ("band 0 (the old rule)", "pub const RUN_TO_RUN: f64 = 0.05;", "pub const RUN_TO_RUN: f64 = 0.0;"),
 ("band 10%", "pub const RUN_TO_RUN: f64 = 0.05;", "pub const RUN_TO_RUN: f64 = 0.10;"),
 ("linear test dropped", "(Less, _) | (_, Greater) => Reading::Point,", "(Less, _) => Reading::Point,"),
 ("at bound whatever the linear test", "(Greater, Less) => Reading::AtBound,", "(Greater, _) => Reading::AtBound,"),
 ("unknown one-CPU bound linear", "None if cpus > 1 => Less,", "None if cpus > 1 => Greater,"),
 ("linux read against its bound", "let reading = if c.design == \"linux\" {", "let reading = if c.design == \"nobody\" {"),
 ("roles swapped", "let role = &mut out[usize::from(!h.site.is_rmap())];", "let role = &mut out[usize::from(h.site.is_rmap())];"),
 ("lock check inverted", ".filter(|(k, _)| *k != want)", ".filter(|(k, _)| *k == want)"),
 ("overlap: either factor missing refuses", "if a.overlap && m.line_overlap.is_none() && m.rmw_overlap.is_none() {", "if a.overlap && (m.line_overlap.is_none() || m.rmw_overlap.is_none()) {"),
 ("overlap check dropped", "if a.overlap && m.line_overlap.is_none() && m.rmw_overlap.is_none() {", "if false {"),
 ("saved busy note ignored", ".filter(|p| p.notes.contains(BUSY_NOTE))", ".filter(|p| p.notes.contains(\"never\"))"),
]
orig = open(F).read()
for name, a, b in M:
    assert orig.count(a) == 1, name
    open(F, 'w').write(orig.replace(a, b))
    try:
        r = subprocess.run(['nice', '-n', '10', 'cargo', 'test', '--release', '-p', 'aspace-lab', '--bin', 'aspace', 'predict::tests'],
                           cwd=W, capture_output=True, text=True)
        out = r.stdout + r.stderr
        failed = [l for l in out.splitlines() if l.startswith('test ') and 'FAILED' in l]
        verdict = 'CAUGHT' if r.returncode != 0 and failed else ('BUILD FAILED' if r.returncode != 0 else 'MISSED')
        print(f"{datetime.datetime.utcnow():%H:%M:%S} {verdict}: {name} -> {', '.join(l.split()[1] for l in failed)}", flush=True)
    finally:
        open(F, 'w').write(orig)
print("done", flush=True)
