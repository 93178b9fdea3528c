#!/bin/bash
# s40-exit runs at 9de7b2d (branch s40-exit), nice -n 10, from the worktree root.
# The commands are final-s39/run.sh's and run2.sh's with this branch's binary.
B=${B:-/tmp/s40x/aspace-9de7b2d}
O=docs/results/predict/exit-s40
log(){ echo "$1 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
for i in 1 2 3; do
  log "validate-$i start"
  nice -n 10 $B predict --validate --busy-ok --host docs/results/predict/host.json --measured docs/results/predict/bench-2core-1-2-threads.json --out $O/validate-$i > $O/validate-$i.txt 2>&1
  log "validate-$i end rc=$?"
done
log "model-fresh start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --save-profiles $O/model-fresh-profiles --out $O/model-fresh > $O/model-fresh.txt 2>&1
log "model-fresh end rc=$?"
H=docs/results/predict/device-16-survey/against-hand-execl
for k in dyn:439174 static:207922; do n=${k%%:*}; e=${k##*:}
  log "kernel-$n start"
  (cd $H && nice -n 10 $B predict --machine ../../../device-16-survey/calib.json --host ../../host.json --binary /tmp/k2/execl-$n-hand --exec-ns $e --designs linux --cpus 1,2,4,8,12,16 --busy-ok --measured real-execl.tsv --out /work/wt/s40-exit/$O/kernel-$n > /work/wt/s40-exit/$O/kernel-$n.txt 2>&1)
  log "kernel-$n end rc=$?"
done
log "model-serial start"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --out $O/model-serial > $O/model-serial.txt 2>&1
log "model-serial end rc=$?"
