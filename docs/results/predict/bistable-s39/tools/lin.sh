#!/bin/bash
# lin.sh TAG DESIGN: one recording of DESIGN with the recorder's debug lines
cd /work/wt/s39-bistable
B=${B:-/tmp/s39b/aspace-base}
t=$1; d=${2:-linux}
echo "$t start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s39b/runs.log
ASPACE_PREDICT_DEBUG=1 nice -n 10 $B predict --machine docs/results/predict/host.json --model-cost --cpus 1,2 --designs $d --busy-ok \
  --save-profiles /tmp/s39b/$t --out /tmp/s39b/$t/out > /tmp/s39b/$t.txt 2>&1
echo "$t end rc=$? $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s39b/runs.log
