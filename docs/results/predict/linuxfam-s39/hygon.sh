#!/bin/sh
# hygon.sh BIN LABEL: the rwsem check on the saved hygon-384 recordings (gunzipped copy in
# /tmp/s39lf-hygon of docs/results/predict/rwsem-s38/recordings/hygon-384-x384).
D=docs/results/predict/linuxfam-s39; BIN=$1; LABEL=$2
echo "hygon-$LABEL start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) bin $BIN" >> $D/runs.log
nice -n 10 $BIN predict --machine hygon-384 --model-cost --lock rwsem --model-exec-ns 13477 \
  --profiles /tmp/s39lf-hygon --designs linux,numa_split --cpus 96,384 --out $D/hygon-$LABEL \
  > $D/hygon-$LABEL.txt 2> $D/hygon-$LABEL.err
echo "hygon-$LABEL end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/runs.log
