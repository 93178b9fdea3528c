#!/bin/sh
# s40-repro: the real execl (dyn, scripts/survey/execl.c, cc -O2) at 1 and 2
# copies and `aspace bench --cost kernel` linux at 1 and 2 threads, in turns
# (A B A B ...): per round real, new bench (this branch), real, old bench (main
# 617299f), so each bench run sits between two real runs. Load average per run.
#   paired.sh OUT ROUNDS NEW_ASPACE OLD_ASPACE EXECL
set -u
OUT=$1; R=$2; NEW=$3; OLD=$4; X=$5
echo "round	what	n	per_s	load1	exec_us" > $OUT/paired.tsv
real() {
  for c in 1 2; do
    l=$(cut -d' ' -f1 /proc/loadavg)
    line=$(nice -n 10 $X $c 2)
    echo "$r	real-$1	$c	$(echo $line | awk '{print $8}')	$l	-" >> $OUT/paired.tsv
  done
}
bench() {
  l=$(cut -d' ' -f1 /proc/loadavg)
  nice -n 10 $2 bench --cost kernel --binary $X --designs linux --call-pattern per-vma --threads 1,2 --duration 1s --repeat 1 --no-predict --out /tmp/s40r/b-$1-$r --json $OUT/bench-$1-r$r.json > $OUT/bench-$1-r$r.log 2>&1
  e=$(grep -o 'real exec [0-9]* us' $OUT/bench-$1-r$r.log | awk '{print $3}')
  for t in 1 2; do
    x=$(grep -E "^linux +per-vma +$t " $OUT/bench-$1-r$r.log | awk '{print $4}')
    echo "$r	bench-$1	$t	$x	$l	$e" >> $OUT/paired.tsv
  done
}
for r in $(seq 1 $R); do
  real a; bench new $NEW; real b; bench old $OLD
done
