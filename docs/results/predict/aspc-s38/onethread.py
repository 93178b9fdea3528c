"""1-thread samples of the device's bench, paired by repeat (the bench runs
every design once per repeat, in order): execs/s, ratio to linux in the same
repeat, hold ns per exec. Usage: onethread.py RESULTS_JSON..."""
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    R = {(r['design'], r['repeat']): r for r in d['runs']
         if r['threads'] == 1 and r.get('call_pattern') == 'per-vma'}
    print(f"\n`{f}`\n")
    print('| repeat | linux | numa_split (/linux) | numa_locks (/linux) | linux_shared_line (/linux) | exclude (/linux) | hold ns/exec numa_split / linux |')
    print('|---|---|---|---|---|---|---|')
    for rep in sorted({k[1] for k in R}):
        l = R[('linux', rep)]['ops_per_sec']
        cell = lambda x: f"{R[(x, rep)]['ops_per_sec']/1e3:.1f}k ({R[(x, rep)]['ops_per_sec']/l:.2f})"
        h = lambda x: sum(s['hold_ns_per_op'] for s in R[(x, rep)]['sites'])
        print(f"| {rep} | {l/1e3:.1f}k | {cell('numa_split')} | {cell('numa_locks')} | {cell('linux_shared_line')} | {cell('exclude')} | {h('numa_split'):.0f} / {h('linux'):.0f} ({h('numa_split')/h('linux'):.2f}) |")
