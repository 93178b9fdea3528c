#!/bin/sh
# record.sh BIN LABEL: records the seven model-cost profiles on this host into
# docs/results/predict/linuxfam-s39/LABEL-rec (then a short 1-CPU simulation, discarded).
set -e
BIN=$1; LABEL=$2
D=docs/results/predict/linuxfam-s39; S=docs/results/device-16-survey
echo "$LABEL-rec start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) bin $BIN" >> $D/runs.log
nice -n 10 $BIN predict --machine $S/calib.json --model-cost --model-exec-ns 13477 --cpus 1 --seconds 0.01 \
  --busy-ok --save-profiles $D/$LABEL-rec --out /tmp/s39lf-$LABEL-recout > $D/$LABEL-rec.txt 2> $D/$LABEL-rec.err
echo "$LABEL-rec end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/runs.log
