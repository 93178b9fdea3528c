#!/bin/bash
# s41 experiment: device-16's calibration cut to n CPUs (one node, as the device), so that a fresh model-cost recording has n slots; simulated at n only.
B=/work/s41/aspace-94f1cba
O=${O:-/work/main/docs/results/predict/slots-s41}
mkdir -p $O
cd /work/main
for n in 1 2 4 8 12; do
python3 -c "
import json,sys;n=int(sys.argv[1]);d=json.load(open('docs/results/device-16-survey/calib.json'))
d['cores_per_node']=n; d['cores_per_llc']=n; d['description']+=' [s41 experiment: cut to %d CPUs so that a recording has %d slots]'%(n,n)
d['speed_by_cpus']=[s for s in d['speed_by_cpus'] if s['cpus']<=n]
json.dump(d,open('$O/dev%d.json'%n,'w'),indent=1)" $n
echo "cut$n start $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log
nice -n 10 $B predict --machine $O/dev$n.json --model-cost --model-exec-ns 13477 --cpus $n --busy-ok --measured docs/results/device-16-survey/bench/results.json --save-profiles $O/prof$n --out $O/cut$n > $O/cut$n.txt 2>&1
echo "cut$n end rc=$? $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/runs.log
done
