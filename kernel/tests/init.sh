#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# /init of the harness's guest (busybox). Sets up the file systems the tests
# use, runs what the kernel command line asks for, prints machine-readable
# lines on the console and powers off:
#   aspace.run=tests      the harness's tests (aspace.only=a,b to pick)
#   aspace.run=selftests  tools/testing/selftests/mm, one line per program
#   aspace.run=lockstat   the exec churn with /proc/lock_stat on
#   aspace.run=shell      an interactive shell (boot.sh -i)
# Lines: "ASPACE-BEGIN <what>", "RESULT <test> PASS|FAIL|SKIP ...",
# "TESTTIME <test> <seconds>s", "SELFTEST <label> <exit status> <seconds>",
# "ASPACE-END <what>".

export PATH=/bin:/sbin:/tests
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /tmp /mnt/ext2 /mnt/huge /dev/hugepages
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t hugetlbfs hugetlbfs /mnt/huge
# a disk file system for the tests that need one (clean page cache pages
# that reclaim can drop, read-only THP): ext2 on a RAM disk
if [ -b /dev/ram0 ]; then
	mke2fs -q -b 4096 /dev/ram0 >/dev/null 2>&1 &&
		mount -t ext2 /dev/ram0 /mnt/ext2
fi
# swap, so that reclaim can page out tmpfs pages too
if [ -b /dev/ram1 ]; then
	mkswap /dev/ram1 >/dev/null 2>&1 && swapon /dev/ram1
fi

arg() {
	for w in $(cat /proc/cmdline); do
		case $w in "$1"=*) echo "${w#*=}" ;; esac
	done
}
run=$(arg aspace.run)
only=$(arg aspace.only | tr , ' ')
timeout=$(arg aspace.timeout)
: "${timeout:=600}"

echo "ASPACE-BEGIN ${run:-none} cpus=$(nproc) nodes=$(ls -d /sys/devices/system/node/node* | wc -l)"

# aspace.promote=eager: the aspace design promotes a file after two
# handoffs of its lock within a second (debugfs), so that the files of
# every test, not only heavily contended ones, run promoted to shards
if [ "$(arg aspace.promote)" = eager ]; then
	d=/sys/kernel/debug/i_mmap
	if echo 2 >$d/promote_handoffs && echo 1000000000 >$d/promote_window_ns; then
		echo "ASPACE-PROMOTE eager"
	else
		echo "ASPACE-PROMOTE failed: no $d/promote_handoffs"
	fi
fi

# Kill what a test left behind (a test killed by its timeout leaves its
# children: exec churners, a migration walker that loops until told to
# stop), or they would hold the pipe to tee open and the guest would wait
# for the boot limit. Spared: every ancestor of this shell (init, the
# loops' subshells), tee, timeout's watcher, kernel threads (pid 2 and its
# children). Only
# builtins read /proc here: /proc/self is this shell. (/proc files have
# size 0, so `test -s` cannot tell a kernel thread.)
reap_strays() {
	read -r self _ _ p _ </proc/self/stat
	anc=" 1 2 $self "
	while [ "${p:-1}" -gt 1 ]; do
		anc="$anc$p "
		read -r _ _ _ p _ </proc/"$p"/stat || p=1
	done
	n=0
	for d in /proc/[0-9]*; do
		q=${d#/proc/}
		case "$anc" in *" $q "*) continue ;; esac
		read -r _ comm _ pp _ <"$d/stat" 2>/dev/null || continue
		# busybox timeout's watcher leaves by itself once the test is gone
		case $comm in "(tee)" | "(timeout)") continue ;; esac
		[ "$pp" != 2 ] || continue
		kill -KILL "$q" 2>/dev/null && n=$((n + 1))
	done
	[ "$n" = 0 ] || echo "# $n stray process(es) of the test killed"
}

# One test: its output, then a RESULT line even if it died without one.
runtest() {
	name=$1
	shift
	out=/tmp/out.$name
	start=$(cut -d. -f1 /proc/uptime)
	# streamed to the console as it runs, kept for the RESULT check
	{
		timeout "$timeout" "$@" 2>&1
		echo $? >/tmp/rc.$name
		reap_strays
	} | tee "$out"
	rc=$(cat /tmp/rc.$name)
	if ! grep -q "^RESULT $name " "$out"; then
		case $rc in
		124 | 137 | 143) why="timed out after ${timeout}s" ;;
		*) why="exit status $rc, no RESULT line" ;;
		esac
		echo "RESULT $name FAIL $why"
	fi
	# the guest's seconds per test (where CI's time goes)
	echo "TESTTIME $name $(($(cut -d. -f1 /proc/uptime) - start))s"
}

case $run in
tests)
	grep -v '^#' /tests/tests.list | while read -r t args; do
		[ -n "$t" ] || continue
		if [ -n "$only" ]; then
			case " $only " in *" $t "*) ;; *) continue ;; esac
		fi
		# shellcheck disable=SC2086 # the arguments are words
		runtest "$t" "/tests/$t" $args
	done
	;;
selftests)
	cd /selftests/mm || exit 1
	# what run_vmtests.sh sets up: 256 MiB of huge pages and then some,
	# SysV shm large enough for thuge-gen
	echo 160 >/proc/sys/vm/nr_hugepages
	echo 4294967296 >/proc/sys/kernel/shmmax
	grep -v '^#' /selftests/mm/selftests-mm.list | while read -r label cmd; do
		[ -n "$label" ] || continue
		if [ -n "$only" ]; then
			case " $only " in *" $label "*) ;; *) continue ;; esac
		fi
		echo "SELFTEST-BEGIN $label"
		start=$(cut -d. -f1 /proc/uptime)
		# shellcheck disable=SC2086 # the arguments are words
		timeout -s KILL "$timeout" $cmd </dev/null >/tmp/selftest.out 2>&1
		rc=$?
		tail -n 40 /tmp/selftest.out
		echo "SELFTEST $label $rc $(($(cut -d. -f1 /proc/uptime) - start))s"
	done
	;;
lockstat)
	runtest lockstat /tests/lockstat /tests/execself
	;;
shell)
	setsid cttyhack sh
	;;
*)
	echo "aspace init: nothing to run (aspace.run=$run)"
	;;
esac

sync
echo "ASPACE-END ${run:-none}"
poweroff -f
