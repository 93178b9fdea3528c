#!/bin/bash
# record N: one model-cost recording of every design on this host, saved
cd /work/wt/s39-bistable
B=/tmp/s39b/aspace-base
n=$1
echo "rec$n start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s39b/runs.log
nice -n 10 $B predict --machine docs/results/predict/host.json --model-cost --cpus 1,2 --busy-ok \
  --save-profiles /tmp/s39b/rec$n --out /tmp/s39b/p$n > /tmp/s39b/p$n.txt 2>&1
echo "rec$n end rc=$? $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s39b/runs.log
