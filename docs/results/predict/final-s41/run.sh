#!/bin/bash
# Lead's s41 closing runs at 94f1cba (s40-exit merged), nice -n 10: saved recordings, the kernel cost against the hand execl, validation, then a fresh device model-cost recording (saved).
B=/work/s41/aspace-94f1cba
W=/work/wt/s41-merge
O=$W/docs/results/predict/final-s41
cd $W
log(){ echo "$1 $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
log "model-serial start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --out $O/model-serial > $O/model-serial.txt 2>&1
log "model-serial end rc=$?"
H=docs/results/predict/device-16-survey/against-hand-execl
for k in dyn:439174 static:207922; do n=${k%%:*}; e=${k##*:}
  log "kernel-$n start"
  (cd $H && nice -n 10 $B predict --machine $W/docs/results/device-16-survey/calib.json --host $W/docs/results/predict/host.json --binary /tmp/k2/execl-$n-hand --exec-ns $e --designs linux --cpus 1,2,4,8,12,16 --busy-ok --measured real-execl.tsv --out $O/kernel-$n > $O/kernel-$n.txt 2>&1)
  log "kernel-$n end rc=$?"
done
log "validate start"
nice -n 10 $B predict --validate --busy-ok --host docs/results/predict/host.json --measured docs/results/predict/bench-2core-1-2-threads.json --out $O/validate > $O/validate.txt 2>&1
log "validate end rc=$?"
log "model-fresh start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --save-profiles $O/model-fresh-profiles --out $O/model-fresh > $O/model-fresh.txt 2>&1
log "model-fresh end rc=$?"
