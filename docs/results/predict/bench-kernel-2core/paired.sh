#!/bin/sh
# Paired: per round the real execl dyn at 1 and 2 copies, then the bench with
# the wall-clock spin (before) and with the CPU-time spin (after).
set -u
OUT=$1; R=${2:-5}
echo "round	what	n	per_s	load1" > $OUT/paired.tsv
for r in $(seq 1 $R); do
  for c in 1 2; do
    l=$(cut -d' ' -f1 /proc/loadavg)
    line=$(nice -n 10 /tmp/execl-dyn $c 2)
    echo "$r	execl	$c	$(echo $line | awk '{print $8}')	$l" >> $OUT/paired.tsv
  done
  for v in wall:/tmp/aspace-v2 cpu:/tmp/aspace-v3; do
    n=${v%%:*}; a=${v#*:}
    l=$(cut -d' ' -f1 /proc/loadavg)
    nice -n 10 $a bench --cost kernel --binary /tmp/execl-dyn --designs linux --call-pattern per-vma --threads 1,2 --duration 1s --repeat 1 --no-predict --out /tmp/t3p-$n-$r --json $OUT/bench-$n-r$r.json > $OUT/bench-$n-r$r.log 2>&1
    for t in 1 2; do
      x=$(grep -E "^linux +per-vma +$t " $OUT/bench-$n-r$r.log | awk '{print $4}')
      echo "$r	bench-$n	$t	$x	$l" >> $OUT/paired.tsv
    done
  done
done
