#!/bin/bash
# usage: val.sh BIN OUTDIR
cd /work/wt/s39-split3
echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" > $2.log
nice -n 10 $1 predict --validate --busy-ok --host docs/results/predict/host.json --measured docs/results/predict/bench-2core-1-2-threads.json --out $2 > $2.txt 2>&1
rc=$?
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) rc $rc" >> $2.log
