#!/bin/bash
# Lead's s40 closing run 2: a fresh device model-cost recording with main's recorder (staggered turns), saved.
B=/work/s40/aspace-exit2
O=/work/main/docs/results/predict/final-s40/after-exit2
cd /work/main
log(){ echo "$1 $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
while pgrep -f "after-exit2/run.sh" >/dev/null; do sleep 5; done
log "model-fresh start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --save-profiles $O/model-fresh-profiles --out $O/model-fresh > $O/model-fresh.txt 2>&1
log "model-fresh end rc=$?"
