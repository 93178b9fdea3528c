#!/bin/bash
# s39-dyn: kernel-cost curves against the hand-made real execl, nice -n 10.
# run.sh BIN OUT [DIR [EXTRA...]]   (DIR: a previous OUT; re-simulates its saved
# recordings, <kind>-prof/linux.recorded.json, instead of recording anew; "" to record;
# EXTRA: more predict flags, e.g. the overlap stand-in)
B=$1; O=$2; P=$3; shift 3 2>/dev/null; X="$@"
R=/work/wt/s39-dyn
H=$R/docs/results/predict/device-16-survey/against-hand-execl
mkdir -p $O
log(){ echo "$1 $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
for k in dyn:439174 static:207922; do n=${k%%:*}; e=${k##*:}
  if [ -n "$P" ]; then src="--profiles $P/$n-prof"; else src="--save-profiles $O/$n-prof"; fi
  log "kernel-$n start ($B $src)"
  (cd $H && nice -n 10 $B predict --machine $R/docs/results/device-16-survey/calib.json \
     --host $R/docs/results/predict/host.json --binary /tmp/k2/execl-$n-hand --exec-ns $e \
     --designs linux --cpus 1,2,4,8,12,16 --busy-ok --measured real-execl.tsv $src $X \
     --out $O/kernel-$n > $O/kernel-$n.txt 2>&1)
  log "kernel-$n end rc=$?"
done
grep -h "linux / kernel" $O/kernel-dyn.txt | head -1 | sed 's/^/dyn file: /'
grep -h "linux / kernel static" $O/kernel-static.txt | sed 's/^/static file: /'
