#!/bin/sh
# Target 3: the real kernel's dynamic execl at 1 and 2 copies against
# `aspace bench --cost kernel` (linux) at 1 and 2 threads, interleaved by round.
set -u
OUT=$1; A=$2; R=${3:-4}
: > $OUT/execl.tsv; echo "round	copies	per_s	load1" > $OUT/execl.tsv
for r in $(seq 1 $R); do
  for c in 1 2; do
    l=$(cut -d' ' -f1 /proc/loadavg)
    line=$(nice -n 10 /tmp/execl-dyn $c 2)
    echo "$r	$c	$(echo $line | awk '{print $8}')	$l" >> $OUT/execl.tsv
    echo "round $r: $line (load $l)" >> $OUT/execl.log
  done
  l=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r bench start load $l" >> $OUT/bench.log
  nice -n 10 $A bench --cost kernel --binary /tmp/execl-dyn --designs linux --threads 1,2 --duration 1s --repeat 1 --no-predict --out $OUT/bench-r$r --json $OUT/bench-r$r.json >> $OUT/bench.log 2>&1
  echo "round $r bench end load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/bench.log
done
