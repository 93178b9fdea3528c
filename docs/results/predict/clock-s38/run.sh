#!/bin/bash
# usage: run.sh BIN LABEL CALIB [extra flags]
# The device model-cost table (placed recording, --model-exec-ns 13477),
# outputs in /tmp/s38-clock-LABEL, the log in /tmp/s38-clock/.
BIN=$1; L=$2; C=$3; shift 3
cd /work/wt/s38-clock
S=docs/results/device-16-survey
echo "$L start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/s38-clock/runs.log
nice -n 10 $BIN predict --machine $C --model-cost --model-exec-ns 13477 --profiles docs/results/predict/placement-2026-11-28/recorded --cpus 1,2,4,8,12,16 --busy-ok --measured $S/bench/results.json --out /tmp/s38-clock-$L "$@" > /tmp/s38-clock/$L.txt 2> /tmp/s38-clock/$L.err
rc=$?
echo "$L end $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) rc $rc" >> /tmp/s38-clock/runs.log
