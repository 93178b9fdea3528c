#!/usr/bin/env bash
# boot.sh: boot one kernel under QEMU (TCG: /dev/kvm on these machines is
# PVM-backed and runs no stock guest) with the harness's initramfs, two NUMA
# nodes, and the console on stdout (and in LOG when given).
#
# Usage: boot.sh [-i] [-c CPUS] [-m MEM_MB] [-l LOG] [-t SECONDS] BZIMAGE [KERNEL ARGS...]
#   -i  interactive (aspace.run=shell, console on the terminal)
#   -c  vCPUs, split evenly over the two nodes (default 2)
#   -t  wall-clock limit for the whole boot (default 1800)
# Exit status: QEMU's (0 after the guest's poweroff), 124 on the time limit.
. "$(dirname "$0")/lib.sh"

cpus=2 mem=2048 logf="" limit=1800 interactive=0
while getopts ic:m:l:t: o; do
	case $o in
	i) interactive=1 ;;
	c) cpus=$OPTARG ;;
	m) mem=$OPTARG ;;
	l) logf=$OPTARG ;;
	t) limit=$OPTARG ;;
	*) die "usage: boot.sh [-i] [-c CPUS] [-m MB] [-l LOG] [-t S] BZIMAGE [ARGS...]" ;;
	esac
done
shift $((OPTIND - 1))
kernel=${1:?usage: boot.sh [-i] [-c CPUS] [-m MB] [-l LOG] [-t S] BZIMAGE [ARGS...]}
shift
initrd=${ASPACE_INITRAMFS:-$ASPACE_KCACHE/initramfs.cpio.gz}
[ -f "$kernel" ] || die "no kernel $kernel"
[ -f "$initrd" ] || die "no initramfs: run initramfs.sh"
((cpus >= 2 && cpus % 2 == 0)) || die "-c wants an even count >= 2 (two nodes)"

half=$((cpus / 2)) mhalf=$((mem / 2))
# no_timer_check: on a loaded host a TCG vCPU can be starved through the
# IO-APIC timer check at boot, which then panics ("IO-APIC + timer doesn't
# work!", seen at load 30); the check tests the emulator, not the kernel
args=(console=ttyS0 panic=-1 oops=panic loglevel=7 no_timer_check "$@")
((interactive)) && args+=(aspace.run=shell)
# shellcheck disable=SC2054 # commas inside QEMU options
qemu=(qemu-system-x86_64 -machine q35 -accel tcg,thread=multi -cpu max
	-smp "$cpus,sockets=2,cores=$half,threads=1" -m "$mem"
	-object "memory-backend-ram,id=m0,size=${mhalf}M"
	-object "memory-backend-ram,id=m1,size=$((mem - mhalf))M"
	-numa "node,nodeid=0,cpus=0-$((half - 1)),memdev=m0"
	-numa "node,nodeid=1,cpus=$half-$((cpus - 1)),memdev=m1"
	-kernel "$kernel" -initrd "$initrd" -append "${args[*]}"
	-nographic -no-reboot -nodefaults -serial stdio -display none)

if ((interactive)); then
	exec "${qemu[@]}"
fi
rc=0
if [ -n "$logf" ]; then
	timeout "$limit" "${qemu[@]}" </dev/null 2>&1 | tee "$logf" || rc=${PIPESTATUS[0]}
else
	timeout "$limit" "${qemu[@]}" </dev/null 2>&1 || rc=$?
fi
exit "$rc"
