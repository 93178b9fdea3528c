#!/bin/bash
# Each mutant: file, python replace (old, new); run the clock tests; restore.
cd /work/wt/s38-clock
mut() {
  name=$1 file=$2 old=$3 new=$4
  cp $file /tmp/s38-clock/mut.bak
  python3 -c "
import sys;p='$file';s=open(p).read();o=sys.argv[1];n=sys.argv[2]
assert s.count(o)==1,(o,s.count(o));open(p,'w').write(s.replace(o,n))" "$old" "$new" || { echo "$name: PATTERN"; return; }
  out=$(timeout 900 nice -n 10 cargo test -q -p aspace-predict --lib clock 2>&1)
  echo "== $name: $(echo "$out" | grep -E '^test result|error\[' | head -2)"
  echo "$out" | grep -E "^    tests::" | sed 's/^/   fails: /'
  cp /tmp/s38-clock/mut.bak $file
}
mut M1-no-timed-read-in-hold crates/predict/src/sim/mod.rs "hold_ns: h.hold_ns + timed_read," "hold_ns: h.hold_ns,"
mut M2-work-not-reduced crates/predict/src/sim/mod.rs "CStep::Work(*t * work_left)" "CStep::Work(*t)"
mut M3-untimed-holds-charged crates/predict/src/sim/mod.rs "(true, Some(ns)) if base_scale" "(_, Some(ns)) if base_scale"
mut M4-no-fair-timeout-read crates/predict/src/sim/parking.rs "                at += self.clock_read_ns;
            }" "            }"
mut M5-hand-off-keeps-read crates/predict/src/sim/mod.rs "unlock_wake_ns: m.unlock_wake_after_release().ns," "unlock_wake_ns: m.unlock_wake().ns,"
mut M6-after-release-not-less crates/predict/src/machine.rs "ns: (w.ns - clock).max(0.0)," "ns: w.ns,"
