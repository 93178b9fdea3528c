#!/bin/bash
# Combined runs at the merge of s37-handoff + s37-place: the fresh placed recording under the checked parking rules
set -u
cd "$(git rev-parse --show-toplevel)"
S=docs/results/device-16-survey; D=docs/results/predict/placement-2026-11-28; C=docs/results/predict/combined-2026-11-28
mkdir -p $C
OV="--overlap --overlap-from docs/results/predict/overlap-2026-11-28/host-calib-07-27.json"
P="target/release/aspace predict --machine $S/calib.json --model-cost --model-exec-ns 13477 --cpus 1,2,4,8,12,16 --busy-ok --measured $S/bench/results.json"
python3 $D/even.py $D/recorded /tmp/s37-even > /dev/null
run() { n=$1; shift; echo "$n start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $C/runs.log
  nice -n 10 $P --out $C/$n "$@" > $C/$n.txt 2> $C/$n.err; echo "$n end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) rc=$?" >> $C/runs.log; }
echo "--- at $(git rev-parse --short HEAD)" >> $C/runs.log
run placed-serial --profiles $D/recorded
run even-serial --profiles /tmp/s37-even
run placed-overlap --profiles $D/recorded $OV
run even-overlap --profiles /tmp/s37-even $OV
