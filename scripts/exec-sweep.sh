#!/usr/bin/env bash
# The model's exec against the real kernel + ld.so, binary by binary.
#
#   scripts/exec-sweep.sh [--all | N [SEED]]      (default: a sample of 60, seed 1)
#   SWEEP_STATIC=1 scripts/exec-sweep.sh --all    (static and static-pie ones too;
#                                                  SWEEP_STATIC=only: only those)
#
# Takes every dynamically linked ELF executable in /usr/bin and /usr/sbin (all of
# them with --all, else a fixed-seed sample of N), runs each under gdb with ASLR off
# (gdb's default, `set disable-randomization on`) and an empty environment, stops it
# at its ELF entry point (AT_ENTRY: after ld.so mapped and relocated every DT_NEEDED
# library and applied RELRO, before the program's own code), and reads
# /proc/PID/maps. The model's exec of the same binary is printed by the exec_maps
# example. They are compared file by file: the sequence of (page offset, length,
# protection, shared flag) pieces of each file. Prints the pass rate over binaries
# and over (binary, file) pairs, each mismatch class with a count and examples, and
# how many pairs also sit at the same addresses.
#
# Needs gdb (with Python) and python3. Writes its raw data under
# target/exec-sweep/ (kernel.txt, model.txt, report.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-60}"
seed="${2:-1}"
out=target/exec-sweep
mkdir -p "$out"
command -v gdb >/dev/null || { echo "exec-sweep.sh: needs gdb" >&2; exit 2; }
command -v python3 >/dev/null || { echo "exec-sweep.sh: needs python3" >&2; exit 2; }

cargo build --release -q -p aspace-mm --example exec_maps
model_bin=target/release/examples/exec_maps

# Dynamically linked ELF executables (a PT_INTERP), one per inode; with
# SWEEP_STATIC=1 also those without one (static, static-pie).
python3 - "$mode" "$seed" > "$out/binaries.txt" <<'EOF'
import os, random, struct, sys
mode, seed = sys.argv[1], int(sys.argv[2])
want_static = os.environ.get("SWEEP_STATIC") in ("1", "only")
only_static = os.environ.get("SWEEP_STATIC") == "only"
seen, found = set(), []
for d in ("/usr/bin", "/usr/sbin"):
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        try:
            st = os.stat(p)
            if not os.path.isfile(p) or not os.access(p, os.X_OK) or st.st_ino in seen:
                continue
            with open(p, "rb") as f:
                h = f.read(64)
                if h[:4] != b"\x7fELF" or h[4] != 2:
                    continue
                phoff, = struct.unpack_from("<Q", h, 32)
                phnum, = struct.unpack_from("<H", h, 56)
                f.seek(phoff)
                ph = f.read(56 * phnum)
            interp = any(struct.unpack_from("<I", ph, 56 * i)[0] == 3 for i in range(phnum))
            etype, = struct.unpack_from("<H", h, 16)
            if (interp and not only_static) or (want_static and not interp and etype in (2, 3)):
                seen.add(st.st_ino)
                found.append(p)
        except (OSError, struct.error):
            continue
if mode != "--all":
    random.Random(seed).shuffle(found)
    found = sorted(found[: int(mode)])
print("\n".join(found))
EOF
n=$(wc -l < "$out/binaries.txt")
echo "exec-sweep: $n binaries ($mode, seed $seed)"

cat > "$out/entry.py" <<'EOF'
import gdb
entry = None
for l in gdb.execute("info auxv", to_string=True).splitlines():
    if "AT_ENTRY" in l:
        entry = int(l.split()[-1], 16)
# A static-pie (or ld.so run directly) starts at its entry point: nothing to run.
if gdb.selected_frame().pc() != entry:
    gdb.execute("tbreak *%#x" % entry, to_string=True)
    gdb.execute("continue", to_string=True)
pid = gdb.selected_inferior().pid
print("@@MAPS")
print(open("/proc/%d/maps" % pid).read(), end="")
print("@@END")
EOF

: > "$out/kernel.txt"
while read -r b; do
  echo "== $b" >> "$out/kernel.txt"
  env -i PATH=/usr/bin:/bin timeout 60 gdb -nx -batch \
    -ex 'set startup-with-shell off' -ex 'set disable-randomization on' \
    -ex starti -ex "source $out/entry.py" -ex kill --args "$b" </dev/null 2>/dev/null \
    | sed -n '/^@@MAPS$/,/^@@END$/p' | grep -v '^@@' >> "$out/kernel.txt" || true
done < "$out/binaries.txt"
xargs -a "$out/binaries.txt" -d '\n' "$model_bin" > "$out/model.txt"

python3 - "$out/kernel.txt" "$out/model.txt" <<'EOF' | tee "$out/report.txt"
import collections, sys

def sections(path):
    secs, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("== "):
            rest = line[3:]
            name = rest.split(" ")[0]
            cur = secs.setdefault(name, {"files": collections.OrderedDict(), "note": rest[len(name):].strip()})
            continue
        f = line.split(None, 5)
        if cur is None or len(f) < 5:
            continue
        if len(f) == 6:
            path = f[5].strip()
        else:
            path = f[4] if not f[4].isdigit() else ""
        if not path.startswith("/"):
            continue
        s, e = (int(x, 16) for x in f[0].split("-"))
        cur["files"].setdefault(path, []).append((int(f[2], 16) // 4096, (e - s) // 4096, f[1][:3], f[1][3], s))
    return secs

def model_sections(path):
    secs, cur = {}, None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("== "):
            rest = line[3:]
            name = rest.split(" ")[0]
            cur = secs.setdefault(name, {"files": collections.OrderedDict(), "note": rest[len(name):].strip()})
            continue
        f = line.split(" ", 3)
        if cur is None or len(f) < 4 or not f[3].startswith("/"):
            continue
        s, e = (int(x, 16) for x in f[0].split("-"))
        cur["files"].setdefault(f[3], []).append((int(f[2], 16) // 4096, (e - s) // 4096, f[1][:3], f[1][3], s))
    return secs

kernel, model = sections(sys.argv[1]), model_sections(sys.argv[2])
classes = collections.defaultdict(list)
pairs = same = placed = 0
bin_ok = bin_total = 0
for b, k in kernel.items():
    if not k["files"]:
        classes["kernel side: did not stop at the entry point"].append(b)
        continue
    m = model.get(b)
    if m is None or m["note"].startswith("error"):
        classes["model refused the binary: " + (m["note"] if m else "missing")].append(b)
        continue
    bin_total += 1
    ok = True
    for path in sorted(set(k["files"]) | set(m["files"])):
        kp, mp = k["files"].get(path), m["files"].get(path)
        pairs += 1
        if kp is None or mp is None:
            ok = False
            classes["file mapped only by the " + ("model" if kp is None else "kernel")].append(f"{b}: {path}")
            continue
        strip = lambda ps: [p[:4] for p in ps]
        if strip(kp) == strip(mp):
            same += 1
            if [p[4] for p in kp] == [p[4] for p in mp]:
                placed += 1
            continue
        ok = False
        if len(kp) != len(mp):
            cls = f"piece count differs (kernel {len(kp)}, model {len(mp)})"
        elif [p[2] for p in kp] != [p[2] for p in mp]:
            cls = "protection differs"
        elif [p[0] for p in kp] != [p[0] for p in mp]:
            cls = "page offset differs"
        else:
            cls = "length differs"
        classes[cls].append(f"{b}: {path}")
    bin_ok += ok
print(f"binaries compared: {bin_total}; identical in every file: {bin_ok} ({100.0 * bin_ok / max(bin_total, 1):.1f}%)")
print(f"(binary, file) pairs: {pairs}; identical: {same} ({100.0 * same / max(pairs, 1):.1f}%); "
      f"of those at the same addresses too: {placed}")
print()
print("| mismatch class | count | examples |")
print("|---|---|---|")
for cls, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
    ex = "; ".join(items[:3])
    print(f"| {cls} | {len(items)} | {ex} |")
if not classes:
    print("| (none) | 0 | |")
EOF
