#!/bin/sh
# s40-repro: kernel-cost predictions from saved profiles, twice, with this
# branch (NEW) and with main 617299f (OLD); each saves its own folder first.
#   profiles.sh OUT NEW OLD EXECL
set -u
O=$1; NEW=$2; OLD=$3; X=$4
log(){ echo "$1 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log; }
P="--machine docs/results/device-16-survey/calib.json --host docs/results/predict/host.json --binary $X --exec-ns 439174 --designs linux --cpus 1,2,4,8,12,16 --busy-ok"
for v in new:$NEW old:$OLD; do n=${v%%:*}; B=${v#*:}
  log "$n save start"
  nice -n 10 $B predict $P --save-profiles $O/$n-saved --out $O/$n-save > $O/$n-save.txt 2>&1
  log "$n save end rc=$?"
  for k in 1 2; do
    log "$n load$k start"
    nice -n 10 $B predict $P --profiles $O/$n-saved --out $O/$n-load$k > $O/$n-load$k.txt 2>&1
    log "$n load$k end rc=$?"
  done
done
# An old folder (no exec-share.json) read by this branch: measured again, said so.
mkdir -p $O/new-saved-old-style && cp $O/new-saved/*.json $O/new-saved-old-style/ && rm $O/new-saved-old-style/exec-share.json
log "new old-style start"
nice -n 10 $NEW predict $P --profiles $O/new-saved-old-style --out $O/new-old-style > $O/new-old-style.txt 2>&1
log "new old-style end rc=$?"
