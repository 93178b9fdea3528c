#!/bin/bash
# s40-kcost: the device model cost on the saved recordings (baseline final-s39: 37/42) and the validation (baseline 20/26), AFTER binary; from the worktree root.
B=$1; D=$PWD/docs/results/predict/kcost-s40
log(){ echo "$1 $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/runs.log; }
log "model-serial start ($B)"
nice -n 10 $B predict --machine docs/results/device-16-survey/calib.json --model-cost --model-exec-ns 13477 --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok --measured docs/results/device-16-survey/bench/results.json --out $D/model-serial > $D/model-serial.txt 2>&1
log "model-serial end rc=$?"
log "validate start ($B)"
nice -n 10 $B predict --validate --busy-ok --host docs/results/predict/host.json --measured docs/results/predict/bench-2core-1-2-threads.json --out $D/validate > $D/validate.txt 2>&1
log "validate end rc=$?"
