#!/bin/sh
# run.sh BIN LABEL [extra flags]: the deterministic device check (simulation only) into
# docs/results/predict/linuxfam-s39/LABEL{,.txt,.err}; appends start, end and load to runs.log.
# PROFILES=DIR: the saved profiles simulated (default: placement-2026-11-28/recorded).
set -e
BIN=$1; LABEL=$2; shift 2
D=docs/results/predict/linuxfam-s39; S=docs/results/device-16-survey
echo "$LABEL start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) bin $BIN profiles ${PROFILES:-default} $*" >> $D/runs.log
nice -n 10 $BIN predict --machine $S/calib.json --model-cost --model-exec-ns 13477 \
  --profiles ${PROFILES:-docs/results/predict/placement-2026-11-28/recorded} --cpus 1,2,4,8,12,16 \
  --busy-ok --measured $S/bench/results.json --out $D/$LABEL "$@" > $D/$LABEL.txt 2> $D/$LABEL.err
echo "$LABEL end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/runs.log
