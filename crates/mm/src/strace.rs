//! Parsing what `strace -f -y [-v -s N] -e trace=memory,process[,...] -o FILE
//! PROGRAM` writes (`scripts/record.sh` adds the stack-limit, `shmget`, unlink and
//! rename calls: [`crate::recording`]; with `-v` and a large `-s`, each `execve`'s
//! strings in full): one
//! [`Event`] per finished system call or process event, `<unfinished ...>` /
//! `<... resumed>` pairs joined per pid, in the order the kernel ran them. Bad lines
//! are a [`ParseError`] with the line number, never a panic.
//!
//! # The kernel's order
//! strace prints a call when it finishes, so a call that another process interrupts
//! is printed twice (`<unfinished ...>`, then `<... resumed>`) and listed here at its
//! second line. That is the order the kernel ran things in, with one exception: a
//! `vfork` (or `clone`, `posix_spawn`'s `clone3`) returns in the parent only after
//! the child has run, often after the child's `execve` has finished, so strace
//! prints `<... vfork resumed> = PID` late. The child exists from the moment the
//! call made it, so [`parse`] moves each clone to just before the first line that
//! shows its child: the child's first call (finished or not), a signal it receives,
//! its `+++ exited` line, or the parent's `--- SIGCHLD` naming it.
//!
//! Calls of threads that were in the kernel at once (their lines overlap, see
//! [`Event::started`]) took their locks in an order the trace does not tell; the
//! replay decides it where the kernel's results do ([`crate::replay::Replay::run`]).
//!
//! # Recorded files
//! A line `# aspace-file ...` (what `scripts/record.sh` appends) records one file the
//! run mapped or executed ([`crate::identity`]); it becomes a
//! [`Call::RecordedFile`] event. A line `# aspace-stack-limit BYTES|unlimited` (what
//! it writes first) is the stack limit the run started with: a
//! [`Call::StackLimit`] event of pid 0. Other lines starting with `#` are comments.

use crate::identity::{FileIdentity, RECORD_PREFIX};
use std::collections::HashMap;
use std::fmt;

/// `mmap` flag bits (x86-64 values).
pub mod map {
    /// `MAP_SHARED`.
    pub const SHARED: u64 = 0x1;
    /// `MAP_PRIVATE`.
    pub const PRIVATE: u64 = 0x2;
    /// `MAP_FIXED`.
    pub const FIXED: u64 = 0x10;
    /// `MAP_32BIT` (x86-64).
    pub const LOW32: u64 = 0x40;
    /// The map type bits (`MAP_SHARED`, `MAP_PRIVATE`, `MAP_SHARED_VALIDATE`,
    /// `MAP_DROPPABLE`).
    pub const TYPE: u64 = 0x0f;
    /// `MAP_SHARED_VALIDATE` (a type: shared, unknown flags refused).
    pub const SHARED_VALIDATE: u64 = 0x3;
    /// `MAP_DROPPABLE` (a type, Linux >= 6.11; strace 6.1 prints it as
    /// `0x8 /* MAP_??? */`).
    pub const DROPPABLE: u64 = 0x8;
    /// `MAP_ANONYMOUS`.
    pub const ANONYMOUS: u64 = 0x20;
    /// `MAP_NORESERVE`.
    pub const NORESERVE: u64 = 0x4000;
    /// `MAP_STACK`.
    pub const STACK: u64 = 0x20000;
    /// `MAP_HUGETLB`.
    pub const HUGETLB: u64 = 0x40000;
    /// `MAP_FIXED_NOREPLACE`.
    pub const FIXED_NOREPLACE: u64 = 0x100000;
    /// `MAP_GROWSDOWN`.
    pub const GROWSDOWN: u64 = 0x100;
    /// `MAP_LOCKED`.
    pub const LOCKED: u64 = 0x2000;
}

/// A system call's result: the value, or the errno name (`ENOMEM`), or
/// [`UNKNOWN_RESULT`].
pub type Ret = Result<u64, String>;

/// The "errno" of a call strace printed as `= ?`: the thread never returned from it
/// (another thread's `exit_group` or `execve` ended it mid-call), so its result is
/// not known. The kernel may have done the call all the same.
pub const UNKNOWN_RESULT: &str = "?";

/// The pid of the trace's first process: its first event with a pid (pid-0
/// events are the recorder's notes: the starting stack limit, the files'
/// identities).
pub fn first_pid(events: &[Event]) -> Option<u32> {
    events.iter().find(|e| e.pid != 0).map(|e| e.pid)
}

/// Whether `ret` is [`UNKNOWN_RESULT`].
pub fn result_unknown(ret: &Ret) -> bool {
    matches!(ret, Err(e) if e == UNKNOWN_RESULT)
}

/// Whether the kernel refused the call: an errno, not [`UNKNOWN_RESULT`].
pub fn result_refused(ret: &Ret) -> bool {
    ret.is_err() && !result_unknown(ret)
}

/// One call or process event of one pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `mmap(addr, len, prot, flags, fd, off)`; `file` is the `-y` path of the fd.
    Mmap {
        /// Hint or fixed address.
        addr: u64,
        /// Length.
        len: u64,
        /// `PROT_*` bits.
        prot: u64,
        /// `MAP_*` bits.
        flags: u64,
        /// The file path (from `-y`) and byte offset, for a file mapping.
        file: Option<(String, u64)>,
        /// strace's `-y` showed the file's name unlinked (`(deleted)`) at the call.
        unlinked: bool,
        /// Result.
        ret: Ret,
    },
    /// `unlink`/`unlinkat` of a name, or a `rename`/`renameat`/`renameat2` onto one
    /// (which unlinks what had it): a file mapped by that name shows `(deleted)`
    /// in the maps from then on.
    Unlink {
        /// The absolute path, `None` where the trace does not give it (relative
        /// to a working directory the trace does not follow).
        path: Option<String>,
        /// Result.
        ret: Ret,
    },
    /// `munmap(addr, len)`.
    Munmap {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// Result.
        ret: Ret,
    },
    /// `mprotect(addr, len, prot)`.
    /// `mprotect(addr, len, prot)`, or `pkey_mprotect(addr, len, prot, pkey)`.
    Mprotect {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// `PROT_*` bits.
        prot: u64,
        /// The protection key of `pkey_mprotect`; -1 for `mprotect` (each area
        /// keeps its own).
        pkey: i64,
        /// Result.
        ret: Ret,
    },
    /// `mbind(addr, len, mode, nodemask, maxnode, flags)`.
    Mbind {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// `MPOL_*` mode with its `MPOL_F_*` flags.
        mode: u64,
        /// The node mask's first word (`NULL` or `[]`: 0).
        nodes: u64,
        /// Result.
        ret: Ret,
    },
    /// `mseal(addr, len, flags)` (Linux >= 6.10; strace 6.1 prints it as
    /// `syscall_0x1ce`).
    Mseal {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// Flags (0 is the only valid value).
        flags: u64,
        /// Result.
        ret: Ret,
    },
    /// `brk(addr)` (`NULL` = 0).
    Brk {
        /// Requested break.
        addr: u64,
        /// Result.
        ret: Ret,
    },
    /// `mremap(old, old_len, new_len, flags[, new_addr])`.
    Mremap {
        /// Old start.
        old: u64,
        /// Old length.
        old_len: u64,
        /// New length.
        new_len: u64,
        /// `MREMAP_*` bits.
        flags: u64,
        /// New address: the target with `MREMAP_FIXED`, a hint with
        /// `MREMAP_DONTUNMAP` alone. `None` when strace did not print it (strace
        /// 6.1 prints it only with `MREMAP_FIXED`, though the kernel reads and
        /// checks it for `MREMAP_DONTUNMAP` too).
        new_addr: Option<u64>,
        /// Result.
        ret: Ret,
    },
    /// `madvise(addr, len, advice)`.
    Madvise {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// `MADV_*` number.
        advice: u64,
        /// Result.
        ret: Ret,
    },
    /// `mlock(addr, len)` (`flags` 0) or `mlock2(addr, len, flags)`.
    Mlock {
        /// Start (need not be page aligned).
        addr: u64,
        /// Length.
        len: u64,
        /// `MLOCK_*` bits ([`crate::mlock::MLOCK_ONFAULT`]).
        flags: u64,
        /// Result.
        ret: Ret,
    },
    /// `munlock(addr, len)`.
    Munlock {
        /// Start (need not be page aligned).
        addr: u64,
        /// Length.
        len: u64,
        /// Result.
        ret: Ret,
    },
    /// `mlockall(flags)`.
    Mlockall {
        /// `MCL_*` bits ([`crate::mlock::MCL_CURRENT`], ...).
        flags: u64,
        /// Result.
        ret: Ret,
    },
    /// `munlockall()`.
    Munlockall {
        /// Result.
        ret: Ret,
    },
    /// `shmget(key, size, flags)`: a System V shared memory segment, made or found
    /// (its size is what a later `shmat` of the id maps).
    ShmGet {
        /// The key (`IPC_PRIVATE`: 0).
        key: u64,
        /// The size asked for (0 or less than the segment's when it exists).
        size: u64,
        /// The segment's id.
        ret: Ret,
    },
    /// `shmat(id, addr, flags)`: maps segment `id` shared (`do_shmat`).
    ShmAt {
        /// The segment's id.
        id: u64,
        /// Where (`NULL`: the kernel chooses, as for `mmap`).
        addr: u64,
        /// `SHM_RDONLY`, `SHM_RND`, `SHM_REMAP`, `SHM_EXEC` bits.
        flags: u64,
        /// The address.
        ret: Ret,
    },
    /// `shmdt(addr)`: unmaps the segment attached at `addr`.
    ShmDt {
        /// Where it was attached.
        addr: u64,
        /// Result.
        ret: Ret,
    },
    /// `clone`/`clone3`/`fork`/`vfork`: a new process or thread.
    Clone {
        /// `CLONE_VM`: the child shares the address space (a thread, or vfork).
        vm: bool,
        /// The child's pid.
        ret: Ret,
    },
    /// `execve(path, ...)`.
    Execve {
        /// The program path.
        path: String,
        /// Result.
        ret: Ret,
        /// The bytes of strings the kernel copies onto the new stack: the path (for
        /// an `execveat` through a descriptor the name `alloc_bprm` makes,
        /// `/dev/fd/N` or `/dev/fd/N/NAME`), every environment and argument string,
        /// each with its NUL ([`exec_strings`]). `None` where the trace does not
        /// show them all: strace prints the environment only with `-v` and cuts
        /// strings at `-s` bytes (`scripts/record.sh` passes both).
        strings: Option<u64>,
    },
    /// `+++ exited with N +++` / `+++ killed by SIG +++`.
    Exit,
    /// `+++ superseded by execve in pid THREAD +++`: a thread of this process called
    /// `execve`, which ends every other thread, the leader included, and gives the
    /// thread the leader's pid (its execve resumes under this pid).
    Superseded {
        /// The thread that took the pid over.
        thread: u32,
    },
    /// A file the run mapped or executed, as the recorder found it
    /// (`# aspace-file ...`; pid 0).
    RecordedFile(Box<RecordedFile>),
    /// A new `RLIMIT_STACK` soft limit (`setrlimit`, or `prlimit64` with a new
    /// limit), which the next exec's mmap base follows
    /// ([`crate::layout::mmap_base`]); or, from `# aspace-stack-limit` (pid 0), the
    /// limit the recorded run started with.
    StackLimit {
        /// The process it applies to: 0 for the caller (or, at pid 0, the run's
        /// first process), else `prlimit64`'s pid.
        target: u32,
        /// The soft limit in bytes; `None`: unlimited.
        limit: Option<u64>,
        /// Result.
        ret: Ret,
    },
    /// Any other system call (the model cannot express it), by name.
    Other {
        /// The call's name.
        name: String,
    },
}

/// A file of the recording and its identity then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFile {
    /// The path, as the recorder wrote it.
    pub path: String,
    /// What the file was when the trace was recorded.
    pub identity: FileIdentity,
}

/// One parsed event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// 1-based line number where the call finished.
    pub line: usize,
    /// 1-based line number where the call started: its `<unfinished ...>` line, or
    /// `line` for a call printed whole. Two calls whose lines overlap were in the
    /// kernel at the same time, in an order the trace does not tell.
    pub started: usize,
    /// The pid (0 when the trace has no pid column).
    pub pid: u32,
    /// What happened.
    pub call: Call,
}

impl Call {
    /// Whether this is a memory call (mmap, munmap, mprotect, brk, mremap, madvise,
    /// mlock, mlock2, munlock, mlockall, munlockall), as opposed to a process event
    /// (clone, execve, exit, other process calls).
    pub fn is_memory(&self) -> bool {
        matches!(
            self,
            Call::Mmap { .. }
                | Call::Munmap { .. }
                | Call::Mprotect { .. }
                | Call::Brk { .. }
                | Call::Mremap { .. }
                | Call::Madvise { .. }
                | Call::Mlock { .. }
                | Call::Munlock { .. }
                | Call::Mlockall { .. }
                | Call::Munlockall { .. }
                | Call::ShmAt { .. }
                | Call::ShmDt { .. }
                | Call::Mbind { .. }
                | Call::Mseal { .. }
        )
    }
}

/// A line that could not be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole trace, in the kernel's order (see the module docs). Signal lines
/// (`--- SIG... ---`) are not events; a `SIGCHLD` line only places a clone.
///
/// ```
/// use mm::strace::{parse, Call};
///
/// let trace = "\
/// 42 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7fc0000
/// 42 munmap(0x7ffff7fc0000, 8192) = 0
/// ";
/// let events = parse(trace)?;
/// assert_eq!(events.len(), 2);
/// assert!(matches!(
///     events[0].call,
///     Call::Mmap { len: 8192, file: None, ret: Ok(0x7ffff7fc0000), .. }
/// ));
/// assert_eq!((events[1].pid, events[1].line), (42, 2));
///
/// // A vfork child's execve finished before strace printed the vfork's result: the
/// // vfork comes first all the same, since the child runs only once it is made.
/// let vfork = "\
/// 1 vfork( <unfinished ...>
/// 2 execve(\"/bin/true\", [\"true\"], 0x0) = 0
/// 1 <... vfork resumed>) = 2
/// ";
/// let events = parse(vfork)?;
/// assert!(matches!(events[0].call, Call::Clone { vm: true, ret: Ok(2) }));
/// assert_eq!(events[0].line, 3);
/// assert!(matches!(events[1].call, Call::Execve { .. }));
/// # Ok::<(), mm::strace::ParseError>(())
/// ```
pub fn parse(text: &str) -> Result<Vec<Event>, ParseError> {
    let mut out = Vec::new();
    // Where each pending call of a pid started.
    let mut pending: HashMap<u32, String> = HashMap::new();
    // Every line that shows a pid exists: its own lines, and SIGCHLD lines naming it.
    let mut shows: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut call_start: HashMap<u32, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| ParseError { line, what };
        let raw = raw.trim_end();
        if raw.is_empty() {
            continue;
        }
        if raw.starts_with('#') {
            if let Some(v) = raw.strip_prefix(STACK_LIMIT_PREFIX) {
                let limit = match v.trim() {
                    "unlimited" => None,
                    n => Some(
                        n.parse::<u64>()
                            .map_err(|e| err(format!("bad stack limit: {e}")))?,
                    ),
                };
                out.push(Event {
                    line,
                    started: line,
                    pid: 0,
                    call: Call::StackLimit {
                        target: 0,
                        limit,
                        ret: Ok(0),
                    },
                });
            } else if raw.starts_with(RECORD_PREFIX) {
                let (path, identity) = FileIdentity::parse_record(raw).map_err(err)?;
                out.push(Event {
                    line,
                    started: line,
                    pid: 0,
                    call: Call::RecordedFile(Box::new(RecordedFile { path, identity })),
                });
            }
            continue;
        }
        let (pid, rest) = match raw.split_once(' ') {
            Some((p, r)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (
                p.parse::<u32>().map_err(|e| err(format!("bad pid: {e}")))?,
                r.trim_start(),
            ),
            _ => (0, raw),
        };
        shows.entry(pid).or_default().push(line);
        if let Some(sig) = rest.strip_prefix("--- ") {
            if let Some(child) = sigchld_pid(sig) {
                shows.entry(child).or_default().push(line);
            }
            continue;
        }
        if let Some(tail) = rest.strip_prefix("+++ ") {
            // `+++ superseded by execve in pid TID +++`: a thread's execve took this pid.
            let call = match tail
                .strip_prefix("superseded by execve in pid ")
                .and_then(|t| t.split_whitespace().next())
            {
                Some(t) => Call::Superseded {
                    thread: t
                        .parse()
                        .map_err(|e| err(format!("bad pid in 'superseded': {e}")))?,
                },
                None => Call::Exit,
            };
            out.push(Event {
                line,
                started: line,
                pid,
                call,
            });
            continue;
        }
        let (text, start) = if let Some(tail) = rest.strip_prefix("<... ") {
            let (_, after) = tail
                .split_once(" resumed>")
                .ok_or_else(|| err("'<...' without 'resumed>'".into()))?;
            let head = pending
                .remove(&pid)
                .ok_or_else(|| err(format!("resumed call of pid {pid} that never started")))?;
            (
                format!("{head}{after}"),
                call_start.remove(&pid).unwrap_or(line),
            )
        } else if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.trim_end().to_string());
            call_start.insert(pid, line);
            continue;
        } else if let Some((head, to)) = rest
            .strip_suffix(" ...>")
            .and_then(|r| r.rsplit_once("<pid changed to "))
        {
            // A thread's execve: it resumes under the leader's pid it takes over.
            let to: u32 = to
                .parse()
                .map_err(|e| err(format!("bad pid in 'pid changed to': {e}")))?;
            pending.insert(to, head.trim_end().to_string());
            call_start.insert(to, line);
            continue;
        } else {
            (rest.to_string(), line)
        };
        out.push(Event {
            line,
            started: start,
            pid,
            call: parse_call(&text).map_err(err)?,
        });
    }
    Ok(kernel_order(out, &shows))
}

/// The child a `--- SIGCHLD {... si_pid=N ...} ---` line names.
fn sigchld_pid(sig: &str) -> Option<u32> {
    let body = sig.strip_prefix("SIGCHLD ")?;
    let at = body.find("si_pid=")? + "si_pid=".len();
    let digits: &str = &body[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Moves each clone whose child shows up before the clone's result line to just
/// before the child's first line (see the module docs); everything else keeps the
/// order of the lines it finished on. `shows[pid]` is every line that shows `pid`
/// exists, in order.
fn kernel_order(events: Vec<Event>, shows: &HashMap<u32, Vec<usize>>) -> Vec<Event> {
    // (line, 0) sorts a moved clone before the event that finished on its child's
    // first line; (line, 1) is every other event where it was.
    let key = |e: &Event| -> (usize, u8) {
        let Call::Clone { ret: Ok(child), .. } = &e.call else {
            return (e.line, 1);
        };
        let first = u32::try_from(*child)
            .ok()
            .and_then(|c| shows.get(&c))
            .and_then(|lines| {
                // The child's first line after the clone began (a pid may be reused).
                let at = lines.partition_point(|&l| l <= e.started);
                lines.get(at).copied()
            });
        match first {
            Some(f) if f < e.line => (f, 0),
            _ => (e.line, 1),
        }
    };
    let mut keyed: Vec<((usize, u8), Event)> = events.into_iter().map(|e| (key(&e), e)).collect();
    // Stable: events of equal keys keep their order.
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, e)| e).collect()
}

/// Splits `name(args) = ret ...`.
fn parse_call(text: &str) -> Result<Call, String> {
    let open = text.find('(').ok_or("no '(' in a call line")?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(format!("bad call name {name:?}"));
    }
    let (args, ret) = split_args(&text[open + 1..])?;
    let ret = parse_ret(ret)?;
    let arg = |i: usize| -> Result<&str, String> {
        args.get(i)
            .map(|s| s.as_str())
            .ok_or_else(|| format!("{name}: missing argument {}", i + 1))
    };
    let num = |i: usize| -> Result<u64, String> {
        parse_num(arg(i)?).ok_or_else(|| format!("{name}: bad number {:?}", args[i]))
    };
    // A flag name this parser does not know (a newer strace's, a newer kernel's):
    // the call is one the model cannot express, and the rest of the trace goes on.
    let symbolic: &[(usize, &[(&str, u64)])] = match name {
        "mmap" => &[(2, PROT_NAMES), (3, MAP_NAMES)],
        "mprotect" | "pkey_mprotect" => &[(2, PROT_NAMES)],
        "mbind" => &[(2, MPOL_NAMES)],
        "mremap" => &[(3, MREMAP_NAMES)],
        "madvise" => &[(2, MADV_NAMES)],
        "shmat" => &[(2, SHM_NAMES)],
        _ => &[],
    };
    for &(i, names) in symbolic {
        if let Some(t) = args.get(i).and_then(|a| unknown_name(a, names)) {
            return Ok(Call::Other {
                name: format!("{name} with {t} (a name the parser does not know)"),
            });
        }
    }
    Ok(match name {
        "mmap" => {
            let fd = arg(4)?;
            let flags = parse_bits(arg(3)?, MAP_NAMES)
                .ok_or_else(|| format!("mmap: bad flags {:?}", args[3]))?;
            let (file, unlinked) = if flags & map::ANONYMOUS != 0 {
                (None, false)
            } else {
                let (_, path, unlinked) = fd_arg(fd).ok_or_else(|| {
                    format!("mmap: fd {fd:?} has no path (record with strace -y)")
                })?;
                (Some((path, num(5)?)), unlinked)
            };
            Call::Mmap {
                addr: num(0)?,
                len: num(1)?,
                prot: parse_bits(arg(2)?, PROT_NAMES)
                    .ok_or_else(|| format!("mmap: bad prot {:?}", args[2]))?,
                flags,
                file,
                unlinked,
                ret,
            }
        }
        "unlink" => Call::Unlink {
            path: resolved(None, arg(0)?),
            ret,
        },
        "unlinkat" => Call::Unlink {
            path: resolved(Some(arg(0)?), arg(1)?),
            ret,
        },
        // A rename unlinks whatever had the new name (RENAME_EXCHANGE keeps both).
        "rename" => Call::Unlink {
            path: resolved(None, arg(1)?),
            ret,
        },
        "renameat" | "renameat2" if !args.iter().any(|a| a.contains("RENAME_EXCHANGE")) => {
            Call::Unlink {
                path: resolved(Some(arg(2)?), arg(3)?),
                ret,
            }
        }
        "munmap" => Call::Munmap {
            addr: num(0)?,
            len: num(1)?,
            ret,
        },
        "mprotect" | "pkey_mprotect" => Call::Mprotect {
            addr: num(0)?,
            len: num(1)?,
            prot: parse_bits(arg(2)?, PROT_NAMES)
                .ok_or_else(|| format!("{name}: bad prot {:?}", args[2]))?,
            pkey: if name == "pkey_mprotect" {
                num(3)? as i64
            } else {
                -1
            },
            ret,
        },
        "mbind" => Call::Mbind {
            addr: num(0)?,
            len: num(1)?,
            mode: parse_bits(arg(2)?, MPOL_NAMES)
                .ok_or_else(|| format!("mbind: bad mode {:?}", args[2]))?,
            nodes: first_mask_word(arg(3)?)
                .ok_or_else(|| format!("mbind: bad node mask {:?}", args[3]))?,
            ret,
        },
        // strace 6.1 has no name for it: `syscall_0x1ce(addr, len, flags, ...)`.
        "mseal" | "syscall_0x1ce" => Call::Mseal {
            addr: num(0)?,
            len: num(1)?,
            flags: num(2)?,
            ret,
        },
        "brk" => Call::Brk { addr: num(0)?, ret },
        "mremap" => Call::Mremap {
            old: num(0)?,
            old_len: num(1)?,
            new_len: num(2)?,
            flags: parse_bits(arg(3)?, MREMAP_NAMES)
                .ok_or_else(|| format!("mremap: bad flags {:?}", args[3]))?,
            new_addr: if args.len() > 4 { Some(num(4)?) } else { None },
            ret,
        },
        "madvise" => Call::Madvise {
            addr: num(0)?,
            len: num(1)?,
            advice: parse_bits(arg(2)?, MADV_NAMES)
                .ok_or_else(|| format!("madvise: bad advice {:?}", args[2]))?,
            ret,
        },
        "mlock" | "mlock2" => Call::Mlock {
            addr: num(0)?,
            len: num(1)?,
            flags: if name == "mlock2" {
                parse_bits(arg(2)?, MLOCK_NAMES)
                    .ok_or_else(|| format!("mlock2: bad flags {:?}", args[2]))?
            } else {
                0
            },
            ret,
        },
        "munlock" => Call::Munlock {
            addr: num(0)?,
            len: num(1)?,
            ret,
        },
        "mlockall" => Call::Mlockall {
            flags: parse_bits(arg(0)?, MCL_NAMES)
                .ok_or_else(|| format!("mlockall: bad flags {:?}", args[0]))?,
            ret,
        },
        "munlockall" => Call::Munlockall { ret },
        "shmget" => Call::ShmGet {
            key: if arg(0)? == "IPC_PRIVATE" { 0 } else { num(0)? },
            size: num(1)?,
            ret,
        },
        "shmat" => Call::ShmAt {
            id: num(0)?,
            addr: num(1)?,
            flags: parse_bits(arg(2)?, SHM_NAMES)
                .ok_or_else(|| format!("shmat: bad flags {:?}", args[2]))?,
            ret,
        },
        "shmdt" => Call::ShmDt { addr: num(0)?, ret },
        "clone" | "clone3" => Call::Clone {
            vm: args.iter().any(|a| a.contains("CLONE_VM")),
            ret,
        },
        "setrlimit" | "prlimit64" => {
            // setrlimit(RESOURCE, NEW); prlimit64(PID, RESOURCE, NEW, OLD).
            let (target, resource, new) = if name == "setrlimit" {
                (0, arg(0)?, arg(1)?)
            } else {
                let pid = u32::try_from(num(0)?).map_err(|_| "prlimit64: bad pid")?;
                (pid, arg(1)?, arg(2)?)
            };
            match (resource, new) {
                ("RLIMIT_STACK", new) if new != "NULL" => Call::StackLimit {
                    target,
                    limit: rlim_cur(new).ok_or_else(|| format!("{name}: bad limit {new:?}"))?,
                    ret,
                },
                // Another resource, or a query: nothing for the address space.
                _ => Call::Other {
                    name: name.to_string(),
                },
            }
        }
        "fork" => Call::Clone { vm: false, ret },
        "vfork" => Call::Clone { vm: true, ret },
        "execve" => {
            let a = arg(0)?;
            let path = unquote(a).ok_or_else(|| format!("{name}: path {a:?} is not a string"))?;
            Call::Execve {
                path: path_of(path),
                ret,
                strings: exec_strings(a, arg(1)?, arg(2)?),
            }
        }
        "execveat" => {
            let (dirfd, a) = (arg(0)?, arg(1)?);
            let inner = unquote(a).ok_or_else(|| format!("{name}: path {a:?} is not a string"))?;
            let fd = fd_arg(dirfd);
            // The file: with AT_EMPTY_PATH and "" the descriptor's own (fexecve),
            // else the name, under the descriptor's directory if relative.
            let path = match (inner.is_empty(), &fd) {
                (true, Some((_, p, _))) if arg(4)?.contains("AT_EMPTY_PATH") => p.clone(),
                _ => resolved(Some(dirfd), a).unwrap_or_else(|| path_of(inner)),
            };
            // The name the kernel copies onto the new stack (`alloc_bprm`): the
            // path if absolute or relative to the working directory, else
            // `/dev/fd/N` or `/dev/fd/N/NAME`.
            let filename = match fd {
                Some((n, _, _)) if inner.is_empty() => format!("\"/dev/fd/{n}\""),
                Some((n, _, _)) if !inner.starts_with('/') => {
                    format!("\"/dev/fd/{n}/{inner}\"")
                }
                _ => a.to_string(),
            };
            Call::Execve {
                path,
                ret,
                strings: exec_strings(&filename, arg(2)?, arg(3)?),
            }
        }
        _ => Call::Other {
            name: name.to_string(),
        },
    })
}

/// What `scripts/record.sh` writes first: the stack limit the recorded run started
/// with, in bytes, or `unlimited`.
pub const STACK_LIMIT_PREFIX: &str = "# aspace-stack-limit ";

/// The soft limit of strace's `{rlim_cur=8192*1024, rlim_max=...}`: `Some(None)` for
/// `RLIM64_INFINITY`, `None` when it is not such a struct.
fn rlim_cur(s: &str) -> Option<Option<u64>> {
    let v = s.split_once("rlim_cur=")?.1;
    let v = v.split([',', '}']).next()?.trim();
    if v == "RLIM64_INFINITY" || v == "RLIM_INFINITY" {
        return Some(None);
    }
    // strace prints a multiple of 1024 as `N*1024`.
    v.split('*')
        .map(parse_num)
        .try_fold(1u64, |acc, f| acc.checked_mul(f?))
        .map(Some)
}

/// The bytes `execve(path, argv, envp)` copies onto the new stack (`copy_strings`:
/// the path, then each environment and argument string, each with its NUL; an
/// empty `argv` gets one empty string), from strace's printing of the three
/// arguments; `None` when one is not shown in full: a string cut at strace's `-s`
/// (`"abc"...`), an array cut short (`..., ...]`), or an environment printed as
/// `0x7ffd /* 41 vars */` (strace without `-v`). A `NULL` array is empty.
///
/// ```
/// use mm::strace::exec_strings;
///
/// // "/bin/true" 10, "true" 5, "A=b" 4.
/// assert_eq!(exec_strings("\"/bin/true\"", "[\"true\"]", "[\"A=b\"]"), Some(19));
/// // Escapes are one byte each; a NULL argv is one empty string.
/// assert_eq!(exec_strings("\"/x\"", "NULL", "[\"\\t\\303\\251\"]"), Some(3 + 1 + 4));
/// assert_eq!(exec_strings("\"/x\"", "[\"x\"]", "0x7ffd /* 3 vars */"), None);
/// assert_eq!(exec_strings("\"/x\"", "[\"abc\"...]", "[]"), None);
/// ```
pub fn exec_strings(path: &str, argv: &str, envp: &str) -> Option<u64> {
    let argv = quoted_array(argv)?;
    let envp = quoted_array(envp)?;
    let argv: u64 = if argv.is_empty() {
        1
    } else {
        argv.iter().map(|n| n + 1).sum()
    };
    Some(quoted_len(path)? + 1 + argv + envp.iter().map(|n| n + 1).sum::<u64>())
}

/// The byte length of each string of a strace array (`["a", "b"]`; `NULL` or `0x0`
/// is empty); `None` for anything else, or a string or array strace cut short.
fn quoted_array(s: &str) -> Option<Vec<u64>> {
    let s = s.trim();
    if s == "NULL" || s == "0x0" {
        return Some(Vec::new());
    }
    let inner = s.strip_prefix('[')?.strip_suffix(']')?.trim();
    let mut out = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        let len = quoted_prefix(rest)?;
        out.push(quoted_len(&rest[..len])?);
        rest = rest[len..].trim_start();
        rest = match rest.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if rest.is_empty() => rest,
            // `"abc"...` (a cut string) or anything else after a string.
            None => return None,
        };
    }
    Some(out)
}

/// The length in text of the quoted string `s` starts with (quotes included).
fn quoted_prefix(s: &str) -> Option<usize> {
    let body = s.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i + 2),
            _ => {}
        }
    }
    None
}

/// The number of bytes strace's quoted string `s` (quotes included) stands for
/// ([`unescape`]).
fn quoted_len(s: &str) -> Option<u64> {
    Some(unescape(unquote(s)?)?.len() as u64)
}

/// The inside of strace's quoted string `s` (`"..."`), still escaped.
fn unquote(s: &str) -> Option<&str> {
    s.strip_prefix('"')?.strip_suffix('"')
}

/// A descriptor argument as `-y` prints it (`3</usr/lib/x.so>`): its number, its
/// path ([`path_of`]) and whether strace marked the file unlinked (strace 6.1 prints
/// `3</memfd:x>(deleted)`, others `3</memfd:x (deleted)>`). `None` for one without
/// a path (`AT_FDCWD`, a bare number).
fn fd_arg(arg: &str) -> Option<(&str, String, bool)> {
    let (n, rest) = arg.split_once('<')?;
    let (rest, after) = rest
        .strip_suffix("(deleted)")
        .map_or((rest, false), |r| (r, true));
    let path = rest.strip_suffix('>')?;
    let (path, inside) = path
        .strip_suffix(" (deleted)")
        .map_or((path, false), |p| (p, true));
    Some((n, path_of(path), after || inside))
}

/// The bytes strace's escaped text `body` stands for (a quoted string's inside, or
/// an fd's `-y` path between `<` and `>`): `\n`, `\t`, `\r`, `\f`, `\v` the
/// control byte, `\ooo` (1-3 octal digits: strace prints every byte outside
/// printable ASCII so, a UTF-8 name's too) and `\xHH` one byte, `\` and any other
/// character after it that character, any other character its UTF-8 bytes. `None`
/// for a `\` at the end, a bad `\x` or an octal value over 255.
fn unescape(body: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let byte = match chars.next()? {
            'n' => b'\n',
            't' => b'\t',
            'r' => b'\r',
            'f' => 0x0c,
            'v' => 0x0b,
            'x' => {
                let mut v = 0u32;
                for _ in 0..2 {
                    v = v * 16 + chars.next_if(char::is_ascii_hexdigit)?.to_digit(16)?;
                }
                v as u8
            }
            d @ '0'..='7' => {
                let mut v = d.to_digit(8)?;
                for _ in 0..2 {
                    match chars.next_if(|c| ('0'..='7').contains(c)) {
                        Some(d) => v = v * 8 + d.to_digit(8)?,
                        None => break,
                    }
                }
                u8::try_from(v).ok()?
            }
            other => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                continue;
            }
        };
        out.push(byte);
    }
    Some(out)
}

/// The absolute path a `*at` call's (`dirfd`, quoted `name`) or a plain call's
/// quoted `name` stands for: `name` itself if absolute, else under `dirfd`'s `-y`
/// path (`3</tmp/dir>`); `None` when relative to the working directory
/// (`AT_FDCWD`, or no `dirfd`), which the trace does not follow.
fn resolved(dirfd: Option<&str>, name: &str) -> Option<String> {
    let name = path_of(unquote(name)?);
    if name.starts_with('/') {
        return Some(name);
    }
    let (_, dir, _) = fd_arg(dirfd?)?;
    dir.starts_with('/')
        .then(|| format!("{}/{name}", dir.trim_end_matches('/')))
}

/// A path as the file system has it, from strace's escaped text of it
/// ([`unescape`]): a name with a space, a quote or a UTF-8 letter (printed as octal
/// escapes) opens as the program opened it. A name that is not UTF-8 once
/// unescaped, or not well escaped, is kept as printed.
fn path_of(escaped: &str) -> String {
    unescape(escaped)
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| escaped.to_string())
}

/// Splits the text after `(` into top-level arguments and the text after `) = `.
fn split_args(s: &str) -> Result<(Vec<String>, &str), String> {
    let mut args = Vec::new();
    // Open brackets; `>` closes only a `<` (clone3 prints `=> {...}`).
    let mut open: Vec<char> = Vec::new();
    let mut quoted = false;
    let mut escaped = false;
    let mut cur = String::new();
    for (i, c) in s.char_indices() {
        if quoted {
            cur.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            // `21<<MAP_HUGE_SHIFT`: a shift, not an fd's path.
            '<' if s[i + 1..].starts_with('<') || s[..i].ends_with('<') => {}
            '(' | '[' | '{' | '<' => open.push(c),
            ']' | '}' | '>' => {
                let want = match c {
                    ']' => '[',
                    '}' => '{',
                    _ => '<',
                };
                if open.last() == Some(&want) {
                    open.pop();
                } else if c != '>' {
                    return Err(format!("unbalanced {c:?} in the arguments"));
                }
            }
            ')' if open.is_empty() => {
                let t = cur.trim();
                if !t.is_empty() || !args.is_empty() {
                    args.push(t.to_string());
                }
                let rest = s[i + 1..].trim_start();
                let ret = rest
                    .strip_prefix('=')
                    .ok_or("no '= result' after the call")?;
                return Ok((args, ret.trim()));
            }
            ')' if open.pop() != Some('(') => {
                return Err("unbalanced ')' in the arguments".into());
            }
            ',' if open.is_empty() => {
                args.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    Err("unterminated argument list".into())
}

fn parse_ret(s: &str) -> Result<Ret, String> {
    let first = s.split_whitespace().next().ok_or("empty result")?;
    if first == UNKNOWN_RESULT {
        return Ok(Err(UNKNOWN_RESULT.into()));
    }
    if first.starts_with('-') {
        let name = s.split_whitespace().nth(1).unwrap_or("E?");
        return Ok(Err(name.to_string()));
    }
    parse_num(first)
        .map(Ok)
        .ok_or_else(|| format!("bad result {first:?}"))
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if s == "NULL" {
        return Some(0);
    }
    // strace -y prints "3</path>" for an fd argument; the number is before '<'.
    let s = s.split('<').next()?;
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(n) = s.strip_prefix('-') {
        n.parse::<u64>().ok().map(|v| v.wrapping_neg())
    } else {
        s.parse().ok()
    }
}

/// The first word of a node mask as strace prints it (`[0x00000000000001]`,
/// `[0x1, 0]`), 0 for `NULL` or `[]`; `None` for anything else.
fn first_mask_word(s: &str) -> Option<u64> {
    let s = s.trim();
    if s == "NULL" {
        return Some(0);
    }
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    match inner.split(',').next().map(str::trim) {
        None | Some("") => Some(0),
        Some(w) => parse_num(w),
    }
}

/// `MAP_HUGE_SHIFT`: strace prints a huge page size as `21<<MAP_HUGE_SHIFT`.
const MAP_HUGE_SHIFT: &str = "MAP_HUGE_SHIFT";

/// The value of strace's `A|B|0x8 /* X_??? */|21<<MAP_HUGE_SHIFT`, each name from
/// `names`; `None` for anything else.
fn parse_bits(s: &str, names: &[(&str, u64)]) -> Option<u64> {
    let mut v = 0;
    for part in flag_parts(s) {
        v |= match names.iter().find(|(n, _)| *n == part) {
            Some((_, b)) => *b,
            None => match part.split_once("<<") {
                Some((n, MAP_HUGE_SHIFT)) => parse_num(n)?.checked_shl(26)?,
                Some(_) => return None,
                None => parse_num(part)?,
            },
        };
    }
    Some(v)
}

/// The parts of strace's flags text `s` (`A|B|0x8 /* MAP_??? */`), each without
/// the comment strace adds to a value it has no name for.
fn flag_parts(s: &str) -> impl Iterator<Item = &str> {
    s.split('|')
        .map(|part| part.split_once("/*").map_or(part, |(v, _)| v).trim())
}

/// The first name in strace's flags text `s` that is not in `names` (a word
/// starting with a letter; numbers, `/* ... */` comments and
/// `N<<MAP_HUGE_SHIFT` are not names).
fn unknown_name<'a>(s: &'a str, names: &[(&str, u64)]) -> Option<&'a str> {
    flag_parts(s)
        .filter(|part| !part.ends_with(MAP_HUGE_SHIFT))
        .find(|part| {
            part.starts_with(|c: char| c.is_ascii_alphabetic())
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && !names.iter().any(|(n, _)| n == part)
        })
}

const PROT_NAMES: &[(&str, u64)] = &[
    ("PROT_NONE", 0),
    ("PROT_READ", 1),
    ("PROT_WRITE", 2),
    ("PROT_EXEC", 4),
    ("PROT_SEM", 8),
    ("PROT_GROWSDOWN", 0x0100_0000),
    ("PROT_GROWSUP", 0x0200_0000),
];

const MAP_NAMES: &[(&str, u64)] = &[
    ("MAP_SHARED", map::SHARED),
    ("MAP_PRIVATE", map::PRIVATE),
    ("MAP_SHARED_VALIDATE", map::SHARED_VALIDATE),
    ("MAP_DROPPABLE", map::DROPPABLE),
    ("MAP_FIXED", map::FIXED),
    ("MAP_ANONYMOUS", map::ANONYMOUS),
    ("MAP_32BIT", map::LOW32),
    ("MAP_ABOVE4G", 0x80),
    ("MAP_GROWSDOWN", map::GROWSDOWN),
    ("MAP_DENYWRITE", 0x800),
    ("MAP_EXECUTABLE", 0x1000),
    ("MAP_LOCKED", map::LOCKED),
    ("MAP_NORESERVE", map::NORESERVE),
    ("MAP_POPULATE", 0x8000),
    ("MAP_NONBLOCK", 0x10000),
    ("MAP_STACK", map::STACK),
    ("MAP_HUGETLB", map::HUGETLB),
    ("MAP_SYNC", 0x80000),
    ("MAP_FIXED_NOREPLACE", map::FIXED_NOREPLACE),
    ("MAP_UNINITIALIZED", 0x400_0000),
];

/// `shmat` flags (`SHM_RDONLY` ...), x86-64 values.
pub mod shm {
    /// `SHM_RDONLY`: map read-only.
    pub const RDONLY: u64 = 0o10000;
    /// `SHM_RND`: round `addr` down to `SHMLBA`.
    pub const RND: u64 = 0o20000;
    /// `SHM_REMAP`: replace what is mapped at `addr`.
    pub const REMAP: u64 = 0o40000;
    /// `SHM_EXEC`: map executable too.
    pub const EXEC: u64 = 0o100000;
}

const SHM_NAMES: &[(&str, u64)] = &[
    ("0", 0),
    ("SHM_RDONLY", shm::RDONLY),
    ("SHM_RND", shm::RND),
    ("SHM_REMAP", shm::REMAP),
    ("SHM_EXEC", shm::EXEC),
];

const MREMAP_NAMES: &[(&str, u64)] = &[
    ("0", 0),
    ("MREMAP_MAYMOVE", 1),
    ("MREMAP_FIXED", 2),
    ("MREMAP_DONTUNMAP", 4),
];

const MLOCK_NAMES: &[(&str, u64)] = &[("MLOCK_ONFAULT", crate::mlock::MLOCK_ONFAULT)];

const MCL_NAMES: &[(&str, u64)] = &[
    ("MCL_CURRENT", crate::mlock::MCL_CURRENT),
    ("MCL_FUTURE", crate::mlock::MCL_FUTURE),
    ("MCL_ONFAULT", crate::mlock::MCL_ONFAULT),
];

const MADV_NAMES: &[(&str, u64)] = &[
    ("MADV_NORMAL", 0),
    ("MADV_RANDOM", 1),
    ("MADV_SEQUENTIAL", 2),
    ("MADV_WILLNEED", 3),
    ("MADV_DONTNEED", 4),
    ("MADV_FREE", 8),
    ("MADV_REMOVE", 9),
    ("MADV_DONTFORK", 10),
    ("MADV_DOFORK", 11),
    ("MADV_MERGEABLE", 12),
    ("MADV_UNMERGEABLE", 13),
    ("MADV_HUGEPAGE", 14),
    ("MADV_NOHUGEPAGE", 15),
    ("MADV_DONTDUMP", 16),
    ("MADV_DODUMP", 17),
    ("MADV_WIPEONFORK", 18),
    ("MADV_KEEPONFORK", 19),
    ("MADV_COLD", 20),
    ("MADV_PAGEOUT", 21),
    ("MADV_POPULATE_READ", 22),
    ("MADV_POPULATE_WRITE", 23),
    ("MADV_DONTNEED_LOCKED", 24),
    ("MADV_COLLAPSE", 25),
    // Linux >= 6.13 (strace 6.1 prints them as `0x66 /* MADV_??? */`).
    ("MADV_GUARD_INSTALL", 102),
    ("MADV_GUARD_REMOVE", 103),
];

/// `mbind`'s modes and mode flags.
const MPOL_NAMES: &[(&str, u64)] = &[
    ("MPOL_DEFAULT", 0),
    ("MPOL_PREFERRED", 1),
    ("MPOL_BIND", 2),
    ("MPOL_INTERLEAVE", 3),
    ("MPOL_LOCAL", 4),
    ("MPOL_PREFERRED_MANY", 5),
    ("MPOL_WEIGHTED_INTERLEAVE", 6),
    ("MPOL_F_NUMA_BALANCING", 1 << 13),
    ("MPOL_F_RELATIVE_NODES", 1 << 14),
    ("MPOL_F_STATIC_NODES", 1 << 15),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags a newer strace or kernel names make the call one the model cannot
    /// express, not the whole trace unreadable; huge page sizes and values strace
    /// has no name for parse.
    #[test]
    fn unknown_flag_names_leave_the_rest_of_the_trace() {
        let trace = "\
7 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FUTURE, -1, 0) = 0x7ffff7fc0000
7 madvise(0x7ffff7fc0000, 4096, MADV_FUTURE) = 0
7 mmap(NULL, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|21<<MAP_HUGE_SHIFT, -1, 0) = 0x7ffff7c00000
7 mprotect(0x7ffff7c00000, 4096, PROT_READ|0x10 /* PROT_??? */) = 0
7 munmap(0x7ffff7fc0000, 4096) = 0
";
        let events = parse(trace).unwrap();
        assert_eq!(events.len(), 5);
        assert!(
            matches!(&events[0].call, Call::Other { name } if name.starts_with("mmap with MAP_FUTURE")),
            "{:?}",
            events[0].call
        );
        assert!(
            matches!(&events[1].call, Call::Other { name } if name.contains("MADV_FUTURE")),
            "{:?}",
            events[1].call
        );
        assert!(
            matches!(events[2].call, Call::Mmap { flags, .. } if flags == 0x22 | map::HUGETLB | 21 << 26),
            "{:?}",
            events[2].call
        );
        assert!(matches!(events[3].call, Call::Mprotect { prot: 0x11, .. }));
        assert!(matches!(events[4].call, Call::Munmap { .. }));
        // A malformed value is still a bad line.
        assert!(parse("7 mprotect(0x1000, 4096, PROT_READ|12<<X) = 0\n").is_err());
    }

    /// Unlinks and renames name the path whose file they unlink, absolute or under
    /// the dirfd's `-y` path; relative to the working directory they name none.
    #[test]
    fn unlinks_and_renames_name_their_path() {
        let trace = "\
7 unlink(\"/dev/shm/PostgreSQL.1\") = 0
7 unlinkat(3</tmp/d>, \"x \\303\\251\", 0) = 0
7 unlinkat(AT_FDCWD, \"rel\", 0) = 0
7 rename(\"/tmp/a\", \"/tmp/b\") = 0
7 renameat2(AT_FDCWD, \"/tmp/c\", 4</srv>, \"d\", RENAME_NOREPLACE) = 0
7 renameat2(AT_FDCWD, \"/tmp/c\", AT_FDCWD, \"/tmp/d\", RENAME_EXCHANGE) = 0
7 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</tmp/x (deleted)>, 0) = 0x7ffff7fc0000
7 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</tmp/y>, 0) = 0x7ffff7fbf000
";
        let events = parse(trace).unwrap();
        let paths: Vec<Option<&str>> = events
            .iter()
            .filter_map(|e| match &e.call {
                Call::Unlink { path, .. } => Some(path.as_deref()),
                _ => None,
            })
            .collect();
        assert_eq!(
            paths,
            [
                Some("/dev/shm/PostgreSQL.1"),
                Some("/tmp/d/x é"),
                None,
                Some("/tmp/b"),
                Some("/srv/d")
            ]
        );
        assert!(matches!(&events[5].call, Call::Other { name } if name == "renameat2"));
        assert!(
            matches!(&events[6].call, Call::Mmap { file: Some((p, 0)), unlinked: true, .. } if p == "/tmp/x")
        );
        assert!(matches!(
            &events[7].call,
            Call::Mmap {
                unlinked: false,
                ..
            }
        ));
    }

    /// `execveat` (glibc's `fexecve`, Python's `os.execve(fd, ...)`) runs the file
    /// its descriptor names, and the kernel copies `/dev/fd/N[/NAME]` onto the new
    /// stack as the file's name, unless the name is absolute or relative to the
    /// working directory.
    #[test]
    fn execveat_runs_the_descriptors_file() {
        let trace = "\
7 execveat(3</usr/bin/true>, \"\", [\"true\"], [\"A=b\"], AT_EMPTY_PATH) = 0
7 execveat(4</usr/bin>, \"env\", [\"env\"], [], 0) = 0
7 execveat(AT_FDCWD, \"/bin/true\", [\"true\"], [], 0) = 0
";
        let got: Vec<(String, Option<u64>)> = parse(trace)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.call {
                Call::Execve { path, strings, .. } => Some((path, strings)),
                _ => None,
            })
            .collect();
        let want = [
            ("/usr/bin/true", "/dev/fd/3\0true\0A=b\0".len()),
            ("/usr/bin/env", "/dev/fd/4/env\0env\0".len()),
            ("/bin/true", "/bin/true\0true\0".len()),
        ];
        let want: Vec<(String, Option<u64>)> = want
            .iter()
            .map(|(p, n)| (p.to_string(), Some(*n as u64)))
            .collect();
        assert_eq!(got, want);
    }

    /// strace escapes a name's spaces-free oddities: a quote, a backslash and every
    /// byte outside printable ASCII (a UTF-8 letter is two octal escapes). The
    /// replay must open the file by its real name.
    #[test]
    fn escaped_paths_are_the_file_systems_names() {
        let trace = "\
7 execve(\"/tmp/dir \\303\\251 x/tr\\\"ue\\\\\", [\"tr\"], 0x7ffe /* 2 vars */) = 0
7 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3</tmp/lib \\303\\251\\t/libz.so.1>, 0) = 0x7ffff7fc0000
7 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3</tmp/del\\303\\251>(deleted), 0) = 0x7ffff7fbf000
";
        let events = parse(trace).unwrap();
        assert!(
            matches!(&events[0].call, Call::Execve { path, .. } if path == "/tmp/dir é x/tr\"ue\\"),
            "{:?}",
            events[0].call
        );
        assert!(
            matches!(&events[1].call, Call::Mmap { file: Some((p, 0)), .. } if p == "/tmp/lib é\t/libz.so.1"),
            "{:?}",
            events[1].call
        );
        assert!(
            matches!(&events[2].call, Call::Mmap { file: Some((p, 0)), .. } if p == "/tmp/delé"),
            "{:?}",
            events[2].call
        );
        // Each escape one byte, as the exec's strings count them.
        assert_eq!(
            unescape("a\\303\\251\\x41\\n\\\\"),
            Some(b"a\xc3\xa9A\n\\".to_vec())
        );
        assert_eq!(quoted_len("\"\\303\\251\""), Some(2));
        // Bad escapes: no bytes; a path that is not UTF-8 once unescaped stays as printed.
        assert_eq!(unescape("a\\"), None);
        assert_eq!(unescape("\\xZ1"), None);
        assert_eq!(unescape("\\777"), None);
        assert_eq!(path_of("/tmp/\\377x"), "/tmp/\\377x");
    }

    #[test]
    fn parses_calls_pairs_and_events() {
        let t = "\
100 execve(\"/bin/true\", [\"true\"], 0x7ffd /* 3 vars */) = 0
100 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7fc0000
100 mmap(NULL, 33763, PROT_READ, MAP_PRIVATE, 3</etc/ld.so.cache>, 0) = 0x7ffff7fb7000
100 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD <unfinished ...>
101 munmap(0x1000, 4096) = -1 EINVAL (Invalid argument)
100 <... clone resumed>, child_tidptr=0x7f) = 101
--- SIGCHLD {si_signo=SIGCHLD} ---
100 mremap(0x7ffff7fc0000, 8192, 16384, MREMAP_MAYMOVE) = 0x7ffff7fb0000
100 madvise(0x7ffff7fb0000, 4096, MADV_DONTFORK) = 0
100 exit_group(0) = ?
100 +++ exited with 0 +++
";
        let ev = parse(t).unwrap();
        assert_eq!(ev.len(), 9);
        assert!(
            matches!(&ev[2].call, Call::Mmap { file: Some((p, 0)), .. } if p == "/etc/ld.so.cache")
        );
        // The child's munmap (line 5) ran after the clone made it: the clone, printed
        // on line 6, comes first.
        assert_eq!(
            (ev[3].line, &ev[3].call),
            (
                6,
                &Call::Clone {
                    vm: false,
                    ret: Ok(101)
                }
            )
        );
        assert_eq!(
            (ev[4].pid, &ev[4].call),
            (
                101,
                &Call::Munmap {
                    addr: 0x1000,
                    len: 4096,
                    ret: Err("EINVAL".into())
                }
            )
        );
        assert!(matches!(
            ev[5].call,
            Call::Mremap {
                flags: 1,
                new_len: 16384,
                ret: Ok(0x7fff_f7fb_0000),
                ..
            }
        ));
        assert!(matches!(ev[6].call, Call::Madvise { advice: 10, .. }));
        assert_eq!(
            ev[7].call,
            Call::Other {
                name: "exit_group".into()
            }
        );
        assert_eq!(ev[8].call, Call::Exit);
    }

    /// (pid, line) of each event, in the order parse gives them.
    fn order(t: &str) -> Vec<(u32, usize)> {
        parse(t).unwrap().iter().map(|e| (e.pid, e.line)).collect()
    }

    #[test]
    fn a_clone_comes_before_the_first_line_that_shows_its_child() {
        // posix_spawn: the child's execve starts (line 2) before the clone3's result.
        let spawn = "\
1 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88 <unfinished ...>
2 execve(\"/bin/true\", [\"/bin/true\"], 0x55 /* 42 vars */ <unfinished ...>
1 <... clone3 resumed>) = 2
2 <... execve resumed>) = 0
2 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7fc0000
";
        assert_eq!(order(spawn), [(1, 3), (2, 4), (2, 5)]);
        // A vfork child whose whole life is printed before the vfork's result, seen
        // only in its exit and the parent's SIGCHLD; then a second child (pid 3) made
        // by a clone printed on one line: nothing to move.
        let early = "\
1 vfork( <unfinished ...>
1 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=2, si_uid=0} ---
2 +++ exited with 0 +++
1 <... vfork resumed>) = 2
1 clone(child_stack=NULL, flags=SIGCHLD) = 3
3 munmap(0x10000, 4096) = 0
";
        assert_eq!(order(early), [(1, 4), (2, 3), (1, 5), (3, 6)]);
        // Only the SIGCHLD shows the child: the clone still moves before it.
        let signal_only = "\
1 vfork( <unfinished ...>
1 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=2, si_uid=0} ---
1 munmap(0x10000, 4096) = 0
1 <... vfork resumed>) = 2
";
        // (The munmap, a bad trace's line of the blocked parent, stays after.)
        let ev = parse(signal_only).unwrap();
        assert!(matches!(ev[0].call, Call::Clone { .. }));
        // A grandchild made by the child before the parent's vfork returned: each
        // clone before its own child's first line.
        let chain = "\
1 vfork( <unfinished ...>
2 vfork( <unfinished ...>
3 execve(\"/bin/true\", [], 0x0) = 0
2 <... vfork resumed>) = 3
1 <... vfork resumed>) = 2
";
        assert_eq!(order(chain), [(1, 5), (2, 4), (3, 3)]);
        // A pid used again by a later child: its first line after the clone counts.
        let reuse = "\
5 munmap(0x10000, 4096) = 0
5 +++ exited with 0 +++
1 vfork( <unfinished ...>
5 execve(\"/bin/true\", [], 0x0) = 0
1 <... vfork resumed>) = 5
";
        assert_eq!(order(reuse), [(5, 1), (5, 2), (1, 5), (5, 4)]);
    }

    #[test]
    fn an_execve_from_a_thread_takes_the_leaders_pid() {
        let t = "\
7 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[8]}, 88) = 8
8 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */ <pid changed to 7 ...>
7 +++ superseded by execve in pid 8 +++
7 <... execve resumed>) = 0
";
        let ev = parse(t).unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(
            (ev[1].pid, &ev[1].call),
            (7, &Call::Superseded { thread: 8 })
        );
        assert!(
            matches!(&ev[2].call, Call::Execve { path, ret: Ok(0), .. } if path == "/bin/true")
        );
        assert_eq!((ev[2].pid, ev[2].line), (7, 4));
    }

    #[test]
    fn recorded_files_are_events_and_other_comments_are_skipped() {
        let t = "\
# a comment
1 munmap(0x10000, 4096) = 0
# aspace-file size=10 mtime=1.000000000 dev=fe:00 ino=7 build-id=ab path=/usr/bin/x y
";
        let ev = parse(t).unwrap();
        assert_eq!(ev.len(), 2);
        let Call::RecordedFile(rec) = &ev[1].call else {
            panic!("{:?}", ev[1]);
        };
        assert_eq!(
            (rec.path.as_str(), rec.identity.size, ev[1].line),
            ("/usr/bin/x y", 10, 3)
        );
        assert_eq!(rec.identity.build_id.as_deref(), Some(&[0xab][..]));
        let bad = parse("# aspace-file size=10 path=/x\n").unwrap_err();
        assert_eq!(bad.line, 1);
        assert!(bad.what.contains("aspace-file line without"), "{bad}");
    }

    #[test]
    fn stack_limits_are_parsed_and_other_limits_are_other_calls() {
        let t = "\
# aspace-stack-limit 8388608
5 prlimit64(0, RLIMIT_STACK, NULL, {rlim_cur=8192*1024, rlim_max=RLIM64_INFINITY}) = 0
5 prlimit64(0, RLIMIT_STACK, {rlim_cur=RLIM64_INFINITY, rlim_max=RLIM64_INFINITY}, NULL) = 0
5 setrlimit(RLIMIT_STACK, {rlim_cur=64*1024*1024, rlim_max=RLIM_INFINITY}) = 0
5 prlimit64(9, RLIMIT_STACK, {rlim_cur=1048576, rlim_max=1048576}, NULL) = -1 EPERM (Operation not permitted)
5 prlimit64(0, RLIMIT_NOFILE, {rlim_cur=1024, rlim_max=4096}, NULL) = 0
";
        let calls: Vec<Call> = parse(t).unwrap().into_iter().map(|e| e.call).collect();
        let limit = |target, limit, ret| Call::StackLimit { target, limit, ret };
        let other = |n: &str| Call::Other { name: n.into() };
        assert_eq!(
            calls,
            [
                limit(0, Some(8 << 20), Ok(0)),
                other("prlimit64"),
                limit(0, None, Ok(0)),
                limit(0, Some(64 << 20), Ok(0)),
                limit(9, Some(1 << 20), Err("EPERM".into())),
                other("prlimit64"),
            ]
        );
        let e = parse("# aspace-stack-limit lots\n").unwrap_err();
        assert!(e.what.contains("stack limit"), "{e}");
        assert!(parse("1 setrlimit(RLIMIT_STACK, {rlim_cur=x}) = 0\n").is_err());
        assert_eq!(
            parse("# aspace-stack-limit unlimited\n").unwrap()[0].call,
            limit(0, None, Ok(0))
        );
    }

    #[test]
    fn lock_calls_are_parsed_with_their_flag_names() {
        let t = "\
3 mlock(0x7ffff7fc0123, 65536) = 0
3 mlock2(0x7ffff7fc0000, 4096, MLOCK_ONFAULT) = 0
3 mlock2(0x7ffff7fc0000, 4096, 0x2 /* MLOCK_??? */) = -1 EINVAL (Invalid argument)
3 munlock(0x7ffff7fc0000, 4096) = 0
3 mlockall(MCL_CURRENT|MCL_FUTURE) = 0
3 mlockall(MCL_FUTURE|MCL_ONFAULT) = -1 ENOMEM (Cannot allocate memory)
3 munlockall() = 0
3 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_LOCKED, -1, 0) = 0x7ffff7fbf000
";
        let calls: Vec<Call> = parse(t).unwrap().into_iter().map(|e| e.call).collect();
        let (addr, page) = (0x7fff_f7fc_0000, 4096);
        assert_eq!(
            calls[..7],
            [
                Call::Mlock {
                    addr: addr + 0x123,
                    len: 65536,
                    flags: 0,
                    ret: Ok(0)
                },
                Call::Mlock {
                    addr,
                    len: page,
                    flags: 1,
                    ret: Ok(0)
                },
                Call::Mlock {
                    addr,
                    len: page,
                    flags: 2,
                    ret: Err("EINVAL".into())
                },
                Call::Munlock {
                    addr,
                    len: page,
                    ret: Ok(0)
                },
                Call::Mlockall {
                    flags: 3,
                    ret: Ok(0)
                },
                Call::Mlockall {
                    flags: 6,
                    ret: Err("ENOMEM".into())
                },
                Call::Munlockall { ret: Ok(0) },
            ]
        );
        assert!(calls.iter().all(Call::is_memory));
        assert!(matches!(calls[7], Call::Mmap { flags, .. } if flags & map::LOCKED != 0));
        assert!(parse("1 mlockall(MCL_SOMETIMES) = 0\n").is_err());
    }

    #[test]
    fn garbage_is_an_error_with_a_line_number_never_a_panic() {
        let good = "1 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x10000\n";
        assert_eq!(parse("1 mmap(NULL\n").unwrap_err().line, 1);
        let e = parse(&format!("{good}2 <... mmap resumed>) = 0\n")).unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("1 mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3, 0) = 0x1000\n").unwrap_err();
        assert!(e.what.contains("strace -y"), "{e}");
        // Every truncation and every single-byte change of a good trace: no panic.
        let text = format!("{good}1 mremap(0x10000, 4096, 8192, MREMAP_MAYMOVE|MREMAP_FIXED, 0x20000) = 0x20000\n1 clone3({{flags=CLONE_VM, exit_signal=0}} => {{parent_tid=[2]}}, 88) = 2\n2 execve(\"/bin/t\\303rue\", [\"a\\\"b\", \"\\x41\\n\"], [\"A=\\\\\", \"\"]) = 0\n");
        let ev = parse(&text).unwrap();
        // "/bin/t\303rue" 10 (+1), "a\"b" 3, "\x41\n" 2, "A=\\" 3, "" 0 (each +1).
        assert!(
            matches!(
                ev[3].call,
                Call::Execve {
                    strings: Some(23),
                    ..
                }
            ),
            "{:?}",
            ev[3].call
        );
        assert_eq!(
            ev[2].call,
            Call::Clone {
                vm: true,
                ret: Ok(2)
            }
        );
        let bytes = text.as_bytes();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for cut in 0..bytes.len() {
            let _ = parse(&String::from_utf8_lossy(&bytes[..cut]));
            for _ in 0..8 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut b = bytes.to_vec();
                b[cut] = (seed >> 24) as u8;
                let _ = parse(&String::from_utf8_lossy(&b));
            }
        }
    }
}
