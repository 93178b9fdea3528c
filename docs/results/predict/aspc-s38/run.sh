#!/bin/bash
# usage: run.sh BIN LABEL [extra flags]
BIN=$1; L=$2; shift 2
cd /work/wt/s38-aspc
S=docs/results/device-16-survey
echo "$L start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/s38/runs.log
nice -n 10 $BIN predict --machine $S/calib.json --model-cost --model-exec-ns 13477 --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok --measured $S/bench/results.json --out /tmp/s38-aspc-$L "$@" > /tmp/s38/$L.txt 2> /tmp/s38/$L.err
echo "$L end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) rc $?" >> /tmp/s38/runs.log
