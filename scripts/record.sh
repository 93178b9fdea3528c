#!/usr/bin/env bash
# Records a run of PROGRAM for the address-space model's replay (crates/mm,
# `aspace replay`), every process followed, with ASLR off:
#
#   OUT.strace     `# aspace-stack-limit BYTES|unlimited` (the stack limit the run
#                  starts with: with the run's own setrlimit/prlimit64 calls, traced
#                  too, it places each exec's mmap area), then strace -f -y -v -s
#                  131072 -e trace=memory,process,setrlimit,prlimit64,shmget,unlink,
#                  unlinkat,rename,renameat,renameat2 (-v -s: each execve's strings
#                  in full, which size the new [stack]; shmget: the size of each
#                  System V segment shmat maps; unlink and rename: when a mapped
#                  file's name goes, so its mappings show "(deleted)"), then one
#                  `# aspace-file` line per file the run mapped or executed (size,
#                  mtime, device and inode,
#                  ELF build-id where readelf can read it), so that a replay on a
#                  machine whose files changed says so (mm::identity)
#   OUT.maps/PID.maps
#                  /proc/PID/maps of each process as it called exit_group, taken in
#                  the same run (strace holds each process there for a moment:
#                  RECORD_EXIT_HOLD_US, default 300000)
#
# Usage: scripts/record.sh OUT PROGRAM [ARGS...]
# Replay: aspace replay OUT.strace --maps OUT.maps  (the first process's layout), or
#         cargo run -p aspace-mm --example replay_recording -- OUT  (every process's).
# Needs strace (and readelf for build-ids). The run must not depend on timing for its
# memory calls to be what a replay reproduces; a process killed by a signal leaves no
# maps. Exit status: PROGRAM's, or 2 if the recording is incomplete.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 OUT PROGRAM [ARGS...]" >&2
    exit 2
fi
out=$1
shift
command -v strace >/dev/null || { echo "$0: strace is not installed" >&2; exit 2; }
hold=${RECORD_EXIT_HOLD_US:-300000}
rm -rf "$out.maps"
mkdir -p "$out.maps"

# strace runs as our child, so that its tracees are our descendants: reading their
# /proc/PID/syscall needs that where Yama's ptrace_scope is 1 (without root, a
# tracee reparented away, a daemon, then leaves no maps).
setarch -R strace -f -y -v -s 131072 \
    -e trace=memory,process,setrlimit,prlimit64,shmget,unlink,unlinkat,rename,renameat,renameat2 \
    -e inject=exit_group:delay_enter="$hold" -o "$out.strace" "$@" &
tracer=$!

# Every process strace traces: its TracerPid is strace's. (Walking the tracer's
# descendants missed daemons: pg_ctl's postmaster and its backends are reparented
# away from it when their parent exits, and stay traced.)
tracees() {
    grep -ls "^TracerPid:[[:space:]]*$tracer\$" /proc/[0-9]*/status 2>/dev/null |
        cut -d/ -f3
}

# True when one of process $1's threads is stopped at the entry of exit_group (231
# on x86-64). Any thread may end the process (Go's runtime calls exit_group from
# whichever thread runs main's goroutine, not the leader); the maps are the
# process's all the same.
exiting() {
    local task nr stat state
    for task in /proc/"$1"/task/*; do
        read -r nr _ 2>/dev/null <"$task/syscall" || continue
        [ "$nr" = 231 ] || continue
        read -r stat 2>/dev/null <"$task/stat" || continue
        state=${stat##*) }
        [ "${state%% *}" = t ] && return 0
    done
    return 1
}

# While strace runs: a process with a thread stopped at exit_group has its final
# layout; copy its maps once, named by the process (thread group) id.
declare -A saved=()
while kill -0 "$tracer" 2>/dev/null; do
    while read -r p; do
        [ -z "${saved[$p]:-}" ] || continue
        exiting "$p" || continue
        if cp "/proc/$p/maps" "$out.maps/$p.maps.tmp" 2>/dev/null; then
            mv "$out.maps/$p.maps.tmp" "$out.maps/$p.maps"
            saved[$p]=1
        fi
    done < <(tracees)
    sleep 0.01
done
status=0
wait "$tracer" || status=$?

# The files the run mapped (strace -y paths, every maps file) or executed; not a
# /proc link (/proc/self/exe names the executable of whoever looks, here stat).
files() {
    grep '^[0-9]* *mmap(' "$out.strace" | grep -o '[0-9]</[^>]*>' |
        sed 's/^[0-9]<\(.*\)>$/\1/' || true
    grep -o 'execve("[^"]*"' "$out.strace" | sed 's/^execve("\(.*\)"$/\1/' || true
    cat "$out.maps"/*.maps 2>/dev/null | awk '$6 ~ /^\// { $1=$2=$3=$4=$5=""; sub(/^ +/, ""); print }' || true
}
have_readelf=$(command -v readelf || true)
while read -r f; do
    [ -f "$f" ] || continue
    read -r size mtime dev ino < <(stat -L -c '%s %.9Y %d %i' -- "$f")
    major=$(( ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff) ))
    minor=$(( (dev & 0xff) | ((dev >> 12) & ~0xff) ))
    build=""
    if [ -n "$have_readelf" ]; then
        # (readelf fails on a file that is not ELF: no build-id.)
        id=$(readelf -n -- "$f" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -1) || true
        [ -z "$id" ] || build=" build-id=$id"
    fi
    printf '# aspace-file size=%s mtime=%s dev=%02x:%02x ino=%s%s path=%s\n' \
        "$size" "$mtime" "$major" "$minor" "$ino" "$build" "$f"
done < <(files | grep -v '^/proc/' | sort -u) >>"$out.strace"

# The stack limit the run started with (ours, which PROGRAM inherited), first.
limit=$(ulimit -s)
[ "$limit" = unlimited ] || limit=$((limit * 1024))
{ echo "# aspace-stack-limit $limit"; cat "$out.strace"; } >"$out.strace.tmp"
mv "$out.strace.tmp" "$out.strace"

first=$(grep -m1 '^[0-9]' "$out.strace" | cut -d' ' -f1)
if [ ! -s "$out.maps/$first.maps" ]; then
    echo "$0: no maps of the first process ($first) at its exit_group: raise RECORD_EXIT_HOLD_US" >&2
    exit 2
fi
exiting=$(grep -c '^[0-9]* *exit_group(' "$out.strace" || true)
echo "recorded $out.strace ($(grep -c '^[0-9]' "$out.strace") lines, $(grep -c '^# aspace-file' "$out.strace") files) and $(ls "$out.maps" | wc -l) of $exiting exiting processes' maps in $out.maps/" >&2
exit "$status"
