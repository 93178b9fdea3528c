#!/bin/bash
# mutants: each applied to a scratch copy of the sources in this worktree, the named tests run, then reverted
cd /work/wt/s39-bistable
R=crates/lab/src/predict/recorder.rs; V=crates/lab/src/predict/validate.rs
run(){ name=$1; tests=$2; out=$(nice -n 10 cargo test --release -p aspace-lab --bin aspace $tests 2>&1 | grep -E "test result|error\[" | head -2); echo "$name: $out"; git checkout -q $R $V; }
# M1: the plain hold a mean again
python3 - <<'P'
p='crates/lab/src/predict/recorder.rs'; s=open(p).read()
s=s.replace("median_of(per_iteration)","per_iteration.iter().sum::<f64>() / per_iteration.len() as f64",1); open(p,'w').write(s)
P
run M1-mean a_preempted_plain_hold
# M2: the upper middle of an even count / the largest
sed -i 's|v.get(v.len().saturating_sub(1) / 2)|v.get(v.len() / 2)|' $V
run M2-upper-median the_median_round
# M3: ratio of the rounds' medians instead of the median of per-round ratios
python3 - <<'P'
p='crates/lab/src/predict/validate.rs'; s=open(p).read()
s=s.replace("    let r: Vec<f64> = design.iter().zip(linux).map(|(d, l)| d / l).collect();\n    median_rate(&r)","    median_rate(design) / median_rate(linux)",1); open(p,'w').write(s)
P
run M3-ratio-of-medians the_ratio_is_taken
# M4: never flag a spread
sed -i 's|if spread > 0.10 {|if spread > 10.0 {|' $V
run M4-no-flag a_wide_spread
