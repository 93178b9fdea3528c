#!/bin/bash
# s39-bistable: two validations back to back and the device model-cost check, nice -n 10.
# BIN: the binary (a copy of target/release/aspace at the commit named in README.md).
B=${BIN:-/tmp/s39b/aspace-fix3}
O=docs/results/predict/bistable-s39
log(){ echo "$1 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
for v in ${RUNS:-validate1 validate2}; do
  log "$v start"
  nice -n 10 $B predict --validate --busy-ok --host docs/results/predict/host.json \
    --measured docs/results/predict/bench-2core-1-2-threads.json --out $O/$v > $O/$v.txt 2>&1
  log "$v end rc=$?"
done
[ -n "$NODEV" ] && exit 0
log "model-dev start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 \
  --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok \
  --measured docs/results/device-16-survey/bench/results.json --out /tmp/bistable-dev > $O/${DEV:-model-dev}.txt 2>&1
log "model-dev end rc=$?"
