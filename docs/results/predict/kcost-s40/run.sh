#!/bin/bash
# s40-kcost: kernel cost by access kind, against the hand-made real execl; nice -n 10, --busy-ok.
# run.sh BEFORE_BIN AFTER_BIN   (from the worktree root)
BB=$1; AB=$2
R=$PWD; D=$R/docs/results/predict/kcost-s40
H=$R/docs/results/predict/device-16-survey/against-hand-execl
log(){ echo "$1 $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/runs.log; }
kc(){ # kc NAME BIN MACHINE SRC EXTRA...
  name=$1; bin=$2; mach=$3; src=$4; shift 4
  for k in dyn:439174 static:207922; do n=${k%%:*}; e=${k##*:}
    if [ "$src" = save ]; then s="--save-profiles $D/prof-$n"; else s="--profiles $D/prof-$n"; fi
    log "$name-$n start ($bin $mach $s $*)"
    (cd $H && nice -n 10 $bin predict --machine $mach --host $R/docs/results/predict/host.json \
       --binary /tmp/k2/execl-$n-hand --exec-ns $e --designs linux --cpus 1,2,4,8,12,16 --busy-ok \
       --measured real-execl.tsv $s "$@" --out $D/$name/$n > $D/$name/$n.txt 2>&1)
    log "$name-$n end rc=$?"
  done
}
mkdir -p $D/{before,after,after-serial,diag-nospeed,diag-standin}
kc before $BB $R/docs/results/device-16-survey/calib.json save
kc after $AB $D/device-calib.json load
kc after-serial $AB $D/device-calib.json load --serial
kc diag-nospeed $AB $D/device-calib-nospeed.json load
kc diag-standin $AB $D/device-calib.json load --overlap-from $R/docs/results/predict/overlap-2026-11-28/host-calib-07-27.json
for r in before after after-serial diag-nospeed diag-standin; do
  echo "$r dyn:    $(grep -h 'linux / kernel dyn' $D/$r/dyn.txt)"
  echo "$r static: $(grep -h 'linux / kernel static' $D/$r/static.txt)"
done > $D/table.txt
