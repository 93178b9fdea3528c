//! `/proc/PID/maps`: its lines, the model's layout as Linux would print it, and the
//! comparison of the two, field by field.
//!
//! Every field a line has is compared: start, end, permissions (`rwx` and `p`/`s`),
//! offset, the file's device and inode (where both sides know them), and the name
//! (the file's path, or `[heap]`, `[stack]`, `[vdso]`, `[vvar]`, `[vvar_vclock]`, or
//! nothing).
//!
//! # Names, as Linux 6.18 gives them
//! `show_map_vma` names an area when it prints it, not when it is made:
//! - a file mapping: the file's path, followed by ` (deleted)` for a file unlinked
//!   since (the model's guess: a file the recording names that does not exist now);
//! - the vdso's areas (special mappings): `[vdso]`, `[vvar]`, `[vvar_vclock]`, kept
//!   by every piece of them and wherever `mremap` moves them;
//! - any other area that overlaps the program break's range (`start < brk` and
//!   `end > start_brk`): `[heap]`;
//! - any other area that contains `start_stack` (the initial stack pointer's
//!   argument area, ends included): `[stack]`.
//!
//! So an anonymous `MAP_FIXED` over the top of the stack is `[stack]` and what is left
//! below it is not; an area moved away from the stack by `mremap` loses the name; a
//! piece of the heap left by `munmap` keeps it. The test `tests/names.rs` checks these
//! against the running kernel.

use crate::file::FileId;
use crate::layout::VdsoLayout;
use crate::vma::{AnonKind, Backing, Prot, Vma};
use crate::{Mm, PAGE_SIZE};
use std::fmt;

/// What `/proc/PID/maps` appends to the path of a file unlinked since it was mapped.
const DELETED: &str = " (deleted)";

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsLine {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `rwx`.
    pub prot: Prot,
    /// `s` (shared) rather than `p` (private).
    pub shared: bool,
    /// The file offset in bytes (0 for anonymous memory).
    pub offset: u64,
    /// The file's device and inode ([`FileId::NONE`] for anonymous memory); `None`
    /// where it is not known (a synthetic file of the model), which compares equal to
    /// any.
    pub file_id: Option<FileId>,
    /// The path or `[name]`; empty for unnamed anonymous memory.
    pub name: String,
}

impl MapsLine {
    /// The permission field: `r-xp`, `rw-s`, ...
    pub fn perms(&self) -> String {
        format!("{}{}", self.prot, if self.shared { 's' } else { 'p' })
    }

    /// Whether `other` is the same line: every field equal, the device and inode
    /// where both sides know them.
    pub fn matches(&self, other: &MapsLine) -> bool {
        self.same_but_file_id(other)
            && match (self.file_id, other.file_id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    /// Whether the lines agree on everything but the device and inode.
    fn same_but_file_id(&self, other: &MapsLine) -> bool {
        (
            self.start,
            self.end,
            self.prot,
            self.shared,
            self.offset,
            &self.name,
        ) == (
            other.start,
            other.end,
            other.prot,
            other.shared,
            other.offset,
            &other.name,
        )
    }
}

impl fmt::Display for MapsLine {
    /// The line as `/proc/PID/maps` prints it (one space before the name; `??:?? ?`
    /// for an unknown device and inode).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:08x}-{:08x} {} {:08x} ",
            self.start,
            self.end,
            self.perms(),
            self.offset
        )?;
        match self.file_id {
            Some(id) => write!(f, "{id}")?,
            None => f.write_str("??:?? ?")?,
        }
        if !self.name.is_empty() {
            write!(f, " {}", self.name)?;
        }
        Ok(())
    }
}

/// Parses `/proc/PID/maps` text; `None` for a malformed line.
///
/// With [`Mm::layout`] and [`diff_maps`], compares the model's layout with a real
/// process's:
///
/// ```
/// use mm::maps::{diff_maps, parse_maps};
/// use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
/// use rmap::{Design, Topology};
///
/// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
/// let fixed = MapFlags { fixed: true, shared: false };
/// mm.mmap(0x10_0000, 2 * PAGE_SIZE, Prot::RW, fixed, None)?;
/// let real = parse_maps("00100000-00102000 rw-p 00000000 00:00 0\n").unwrap();
/// let (model_only, kernel_only) = diff_maps(&mm.layout().maps(), &real);
/// assert!(model_only.is_empty() && kernel_only.is_empty());
/// // Private versus shared is a difference.
/// let shared = parse_maps("00100000-00102000 rw-s 00000000 00:00 0\n").unwrap();
/// assert_eq!(diff_maps(&mm.layout().maps(), &shared).1, shared);
/// assert_eq!(parse_maps("not a maps line"), None);
/// # Ok::<(), mm::Error>(())
/// ```
pub fn parse_maps(text: &str) -> Option<Vec<MapsLine>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse_line)
        .collect()
}

fn parse_line(l: &str) -> Option<MapsLine> {
    let mut it = l.split_whitespace();
    let (s, e) = it.next()?.split_once('-')?;
    let perms = it.next()?;
    let shared = match perms.as_bytes().get(3) {
        Some(b's') => true,
        Some(b'p') => false,
        _ => return None,
    };
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let file_id = FileId::parse(it.next()?, it.next()?)?;
    let name = it.collect::<Vec<_>>().join(" ");
    Some(MapsLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        prot: Prot::from_maps(perms)?,
        shared,
        offset,
        file_id: Some(file_id),
        name,
    })
}

/// The vDSO layout a recorded `/proc/PID/maps` shows: the sizes of its `[vvar]`,
/// `[vvar_vclock]` (if any) and `[vdso]`, where they lie together as an exec maps
/// them; `None` without them (a program that unmapped or moved one).
///
/// ```
/// use mm::layout::VdsoLayout;
/// use mm::maps::{parse_maps, vdso_layout};
/// let linux_6_8 = parse_maps(
///     "7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0 [vvar]\n\
///      7ffff7fc5000-7ffff7fc7000 r-xp 00000000 00:00 0 [vdso]\n",
/// )
/// .unwrap();
/// assert_eq!(vdso_layout(&linux_6_8), Some(VdsoLayout::LINUX_5_6));
/// ```
pub fn vdso_layout(lines: &[MapsLine]) -> Option<VdsoLayout> {
    let find = |name: &str| lines.iter().find(|l| l.name == name);
    let pages = |l: &MapsLine| (l.end - l.start) / PAGE_SIZE;
    let vvar = find("[vvar]")?;
    let code = find("[vdso]")?;
    let clock = find("[vvar_vclock]");
    let clock_end = match clock {
        Some(c) if c.start == vvar.end => c.end,
        Some(_) => return None,
        None => vvar.end,
    };
    (code.start == clock_end).then(|| VdsoLayout {
        vvar: pages(vvar),
        vclock: clock.map_or(0, pages),
        code: pages(code),
    })
}

/// The lines only one side has: (model only, kernel only), each in address order. A
/// line is the same on both sides when [`MapsLine::matches`] says so. One known
/// difference is normalised on the kernel's side: `[vsyscall]` is dropped (the model
/// has none: it lies above the user address space, in no VMA tree).
pub fn diff_maps(model: &[MapsLine], real: &[MapsLine]) -> (Vec<MapsLine>, Vec<MapsLine>) {
    let real: Vec<&MapsLine> = real.iter().filter(|l| l.name != "[vsyscall]").collect();
    let only_model = model
        .iter()
        .filter(|m| !real.iter().any(|r| m.matches(r)))
        .cloned()
        .collect();
    let only_real = real
        .iter()
        .filter(|r| !model.iter().any(|m| m.matches(r)))
        .map(|&r| r.clone())
        .collect();
    (only_model, only_real)
}

/// Takes out of [`diff_maps`]'s two lists each private area that the model has as
/// one line and the kernel as two or more adjacent lines tiling it exactly, with the
/// same permissions, name, file and contiguous offsets, and describes each. Such a
/// difference is one a memory-call trace cannot show: the kernel merges two private
/// areas only when their `anon_vma`s are compatible, and an area gets its `anon_vma`
/// from its first write fault (`anon_vma_prepare`), which strace does not record. A
/// JVM committing its heap in 64 KiB `MAP_FIXED` pieces out of order leaves such
/// splits: a piece written before its neighbours were mapped keeps its own
/// `anon_vma`. So does a forked child growing its heap: `brk` extends a faulted area
/// only while its `anon_vma` chain has one link, and the child's has its parent's
/// too (`is_mergeable_anon_vma`), so the growth is a second area. (A flag the model
/// does not keep would look the same: one set by a call the replay reports as not
/// expressed, `mbind` or `mseal`, or by one the trace does not show, such as
/// userfaultfd's registration, an `ioctl`.)
///
/// ```
/// use mm::maps::{kept_apart, parse_maps};
///
/// let mut model = parse_maps("7f0000000000-7f0000070000 rw-p 00000000 00:00 0\n").unwrap();
/// let mut real = parse_maps(
///     "7f0000000000-7f0000040000 rw-p 00000000 00:00 0\n\
///      7f0000040000-7f0000070000 rw-p 00000000 00:00 0\n",
/// )
/// .unwrap();
/// let said = kept_apart(&mut model, &mut real);
/// assert!(model.is_empty() && real.is_empty());
/// assert!(said[0].starts_with("kept apart by the kernel: 7f0000000000-7f0000070000 is 2 areas"));
/// // A split the maps do show (another permission) stays a difference.
/// let mut model = parse_maps("1000-3000 rw-p 00000000 00:00 0\n").unwrap();
/// let mut real =
///     parse_maps("1000-2000 rw-p 00000000 00:00 0\n2000-3000 r--p 00000000 00:00 0\n").unwrap();
/// assert!(kept_apart(&mut model, &mut real).is_empty());
/// assert_eq!((model.len(), real.len()), (1, 2));
/// ```
pub fn kept_apart(model_only: &mut Vec<MapsLine>, kernel_only: &mut Vec<MapsLine>) -> Vec<String> {
    let mut said = Vec::new();
    let mut taken = vec![false; kernel_only.len()];
    model_only.retain(|m| {
        if m.shared {
            // Shared memory has no anon_vma: a split of it the maps do not show
            // would be the model's.
            return true;
        }
        // The kernel's lines inside m, in address order.
        let mut pieces: Vec<usize> = (0..kernel_only.len())
            .filter(|&i| {
                !taken[i] && kernel_only[i].start >= m.start && kernel_only[i].end <= m.end
            })
            .collect();
        pieces.sort_by_key(|&i| kernel_only[i].start);
        // Anonymous memory shows offset 0 in every piece; a file's pieces go on
        // through the file.
        let anon = m.file_id == Some(FileId::NONE);
        let mut at = m.start;
        for &i in &pieces {
            let k = &kernel_only[i];
            let offset = if anon {
                m.offset
            } else {
                m.offset + (k.start - m.start)
            };
            let same = k.start == at
                && k.prot == m.prot
                && !k.shared
                && k.name == m.name
                && k.offset == offset
                && match (k.file_id, m.file_id) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                };
            if !same {
                return true;
            }
            at = k.end;
        }
        if pieces.len() < 2 || at != m.end {
            return true;
        }
        for &i in &pieces {
            taken[i] = true;
        }
        said.push(format!(
            "kept apart by the kernel: {:08x}-{:08x} is {} areas in the recorded maps, one in \
             the model's (private memory the kernel would not merge: the pieces' \
             anon_vmas differ, or one came through fork, from page faults the trace does \
             not show)",
            m.start,
            m.end,
            pieces.len()
        ));
        false
    });
    let mut i = 0;
    kernel_only.retain(|_| {
        i += 1;
        !taken[i - 1]
    });
    said
}

/// The model's layout `model` against the kernel's `real`, in words: the differences
/// ([`diff_maps`], then [`describe_differences`]), and apart from them what the
/// kernel did for a reason the trace does not show: areas it kept apart
/// ([`kept_apart`]) and a stack grown by page faults ([`grown_stack`]).
pub fn compare_maps(model: &[MapsLine], real: &[MapsLine]) -> (Vec<String>, Vec<String>) {
    let (mut model_only, mut kernel_only) = diff_maps(model, real);
    let mut unseen = kept_apart(&mut model_only, &mut kernel_only);
    unseen.extend(grown_stack(&mut model_only, &mut kernel_only));
    (describe_differences(&model_only, &kernel_only), unseen)
}

/// Takes out of [`diff_maps`]'s two lists a `[stack]` that the kernel's maps show
/// reaching further down than the model's, from the same top with the same
/// permissions, over addresses the model has nothing in, and describes it. The
/// kernel grows the stack at a page fault below it (`expand_stack`), which a
/// memory-call trace does not show: a program that recursed deeply or put a large
/// array on its stack. (The model's `[stack]` is what `execve` made.)
///
/// ```
/// use mm::maps::{grown_stack, parse_maps};
///
/// let stack = |start: &str| {
///     parse_maps(&format!("{start}-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n")).unwrap()
/// };
/// let (mut model, mut real) = (stack("7ffffffde000"), stack("7ffffff33000"));
/// let said = grown_stack(&mut model, &mut real);
/// assert!(model.is_empty() && real.is_empty());
/// assert!(said[0].starts_with("grown by page faults: [stack] 7ffffff33000-7ffffffff000"));
/// // A stack the kernel has smaller, or ending elsewhere, stays a difference.
/// let (mut model, mut real) = (stack("7ffffff33000"), stack("7ffffffde000"));
/// assert!(grown_stack(&mut model, &mut real).is_empty());
/// assert_eq!((model.len(), real.len()), (1, 1));
/// ```
pub fn grown_stack(model_only: &mut Vec<MapsLine>, kernel_only: &mut Vec<MapsLine>) -> Vec<String> {
    const STACK: &str = "[stack]";
    let Some(m) = model_only.iter().position(|l| l.name == STACK) else {
        return Vec::new();
    };
    let Some(k) = kernel_only.iter().position(|l| l.name == STACK) else {
        return Vec::new();
    };
    let (ms, ks) = (&model_only[m], &kernel_only[k]);
    let grown = ks.end == ms.end
        && ks.start < ms.start
        && ks.prot == ms.prot
        && ks.shared == ms.shared
        && ks.offset == ms.offset
        && !model_only
            .iter()
            .any(|l| l.start < ms.start && l.end > ks.start);
    if !grown {
        return Vec::new();
    }
    let said = format!(
        "grown by page faults: [stack] {:08x}-{:08x} in the recorded maps, {:08x}-{:08x} \
         in the model's ({} KiB more: the kernel grows the stack at a fault below it, \
         which the trace does not show; in a trace without the exec's strings, strace \
         -v, a page of it may be theirs)",
        ks.start,
        ks.end,
        ms.start,
        ms.end,
        (ms.start - ks.start) / 1024
    );
    model_only.remove(m);
    kernel_only.remove(k);
    vec![said]
}

/// The differences [`diff_maps`] found, in words, in address order: the lines of one
/// file that differ only in their device and inode are one entry saying that the file
/// is not the one the recording was made against; every other line is
/// `model only: LINE` or `kernel only: LINE`.
///
/// ```
/// use mm::maps::{describe_differences, parse_maps};
///
/// let model = parse_maps("00400000-00401000 r--p 00000000 fe:00 12 /usr/bin/x\n").unwrap();
/// let real = parse_maps("00400000-00401000 r--p 00000000 fe:00 13 /usr/bin/x\n").unwrap();
/// assert_eq!(
///     describe_differences(&model, &real),
///     ["file /usr/bin/x changed since it was recorded: device and inode fe:00 13 \
///       in the recorded maps, fe:00 12 now (00400000-00401000)"]
/// );
/// ```
pub fn describe_differences(model_only: &[MapsLine], kernel_only: &[MapsLine]) -> Vec<String> {
    let id = |l: &MapsLine| l.file_id.map_or("?".into(), |x| x.to_string());
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut paired = vec![false; kernel_only.len()];
    // (file, recorded id, id now) -> the areas that differ only so.
    type Change = (String, String, String);
    let mut changed: Vec<(Change, Vec<(u64, u64)>)> = Vec::new();
    for m in model_only {
        let twin = kernel_only
            .iter()
            .enumerate()
            .find(|(i, k)| !paired[*i] && m.same_but_file_id(k));
        match twin {
            Some((i, k)) => {
                paired[i] = true;
                let key = (m.name.clone(), id(k), id(m));
                match changed.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, areas)) => areas.push((m.start, m.end)),
                    None => changed.push((key, vec![(m.start, m.end)])),
                }
            }
            None => out.push((m.start, format!("model only:  {m}"))),
        }
    }
    for ((file, then, now), areas) in changed {
        let (first, last) = (areas[0].0, areas[areas.len() - 1].1);
        let which = match areas.len() {
            1 => format!("{first:08x}-{last:08x}"),
            n => format!("{n} areas, {first:08x}-{last:08x}"),
        };
        out.push((
            first,
            format!(
                "file {file} changed since it was recorded: device and inode {then} in the \
                 recorded maps, {now} now ({which})"
            ),
        ));
    }
    for (k, _) in kernel_only.iter().zip(&paired).filter(|(_, p)| !**p) {
        out.push((k.start, format!("kernel only: {k}")));
    }
    out.sort_by_key(|(at, _)| *at);
    out.into_iter().map(|(_, s)| s).collect()
}

/// An address space's layout at one moment, with what `/proc/PID/maps` needs to name
/// its areas: a snapshot ([`Mm::layout`]), cheap to take (the VMAs are cloned, not
/// printed) and to keep.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// The VMAs, in address order.
    pub vmas: Vec<Vma>,
    /// `mm->start_stack`: the area containing it is `[stack]`.
    pub start_stack: u64,
    /// `mm->start_brk`.
    pub start_brk: u64,
    /// `mm->brk`: an area overlapping `[start_brk, brk)` is `[heap]`.
    pub brk: u64,
    /// Per VMA, whether its file's name was unlinked when the layout was taken
    /// ([`crate::File::deleted`] then: a later `unlink` does not change a layout
    /// already taken); empty: each file as it is when printed.
    pub deleted: Vec<bool>,
}

impl Layout {
    /// The layout as `/proc/PID/maps` lines (see the module docs for the names).
    pub fn maps(&self) -> Vec<MapsLine> {
        self.vmas
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let (offset, file_id, name) = match &v.backing {
                    Backing::File { file, pgoff } => {
                        let mut name = file.path().display().to_string();
                        let deleted = self.deleted.get(i).copied();
                        if deleted.unwrap_or_else(|| file.deleted()) && !name.ends_with(DELETED) {
                            name.push_str(DELETED);
                        }
                        (pgoff * PAGE_SIZE, file.id(), name)
                    }
                    Backing::Anon(kind) => {
                        (0, Some(FileId::NONE), self.anon_name(v, *kind).to_string())
                    }
                };
                MapsLine {
                    start: v.start,
                    end: v.end,
                    prot: v.prot,
                    shared: v.flags.shared,
                    offset,
                    file_id,
                    name,
                }
            })
            .collect()
    }

    /// The name of anonymous `v`: its special mapping's, else `[heap]` or `[stack]`
    /// by address, in the kernel's order (`get_vma_name`).
    fn anon_name(&self, v: &Vma, kind: AnonKind) -> &'static str {
        match kind {
            AnonKind::Vdso | AnonKind::Vvar | AnonKind::VvarVclock => {
                kind.name().unwrap_or_default()
            }
            AnonKind::Plain | AnonKind::Heap | AnonKind::Stack => {
                if v.start < self.brk && v.end > self.start_brk {
                    "[heap]"
                } else if v.start <= self.start_stack && v.end >= self.start_stack {
                    "[stack]"
                } else {
                    ""
                }
            }
        }
    }
}

impl Mm {
    /// The layout now, with the program break and `start_stack` that name its heap
    /// and stack ([`Layout::maps`] prints it as `/proc/PID/maps` would). Takes the
    /// mmap lock, so the VMAs and the break are of one moment.
    pub fn layout(&self) -> Layout {
        let st = self.state.lock();
        let vmas: Vec<Vma> = self
            .tree
            .reader()
            .iter()
            .map(|(_, v)| Vma::clone(&v))
            .collect();
        let deleted = vmas
            .iter()
            .map(|v| v.file().is_some_and(|(f, _)| f.deleted()))
            .collect();
        Layout {
            vmas,
            start_stack: st.start_stack,
            start_brk: st.brk_start,
            brk: st.brk,
            deleted,
        }
    }

    /// Sets `start_stack`, the address whose area `/proc/PID/maps` names `[stack]`
    /// (`/proc/PID/stat` field 28). Exec sets it to [`crate::layout::START_STACK`];
    /// this is for a space built from a real process's maps
    /// ([`Mm::build_from_maps`]), whose value the caller read.
    pub fn set_start_stack(&self, addr: u64) {
        self.state.lock().start_stack = addr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grown stack is not a difference; a shrunk one, or one that ran over an
    /// area the model has, is.
    #[test]
    fn a_stack_grown_by_faults_is_named_not_counted() {
        let maps = |stack: &str| {
            parse_maps(&format!(
                "555555554000-555555556000 r--p 00000000 fe:00 7 /bin/x\n\
                 7ffff7ff0000-7ffff7ff1000 rw-p 00000000 00:00 0\n\
                 {stack}-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n"
            ))
            .unwrap()
        };
        let (diffs, unseen) = compare_maps(&maps("7ffffffde000"), &maps("7ffffff33000"));
        assert!(diffs.is_empty(), "{diffs:?}");
        assert_eq!(unseen.len(), 1);
        assert!(unseen[0].contains("684 KiB more"), "{unseen:?}");
        let (diffs, unseen) = compare_maps(&maps("7ffffff33000"), &maps("7ffffffde000"));
        assert_eq!((diffs.len(), unseen.len()), (2, 0));
        // The model has an area where the kernel's stack would have grown.
        let mut model = maps("7ffffffde000");
        model.insert(
            2,
            parse_maps("7ffffff40000-7ffffff41000 rw-p 00000000 00:00 0\n").unwrap()[0].clone(),
        );
        let (diffs, unseen) = compare_maps(&model, &maps("7ffffff33000"));
        assert_eq!((diffs.len(), unseen.len()), (3, 0), "{diffs:?}");
    }
    use crate::vma::VmFlags;

    fn line() -> MapsLine {
        parse_maps("7ffff7d1c000-7ffff7d42000 r--p 00001000 fe:00 326269   /usr/lib/libc.so.6\n")
            .unwrap()
            .remove(0)
    }

    #[test]
    fn every_field_of_a_line_is_compared() {
        let l = line();
        assert_eq!(
            (l.start, l.end, l.prot, l.shared, l.offset),
            (0x7fff_f7d1_c000, 0x7fff_f7d4_2000, Prot::R, false, 0x1000)
        );
        assert_eq!(l.file_id, FileId::parse("fe:00", "326269"));
        assert_eq!(l.name, "/usr/lib/libc.so.6");
        let changes: [fn(&mut MapsLine); 7] = [
            |l| l.start += PAGE_SIZE,
            |l| l.end += PAGE_SIZE,
            |l| l.prot = Prot::RX,
            |l| l.shared = true,
            |l| l.offset += PAGE_SIZE,
            |l| l.file_id = Some(FileId::NONE),
            |l| l.name.push('x'),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = l.clone();
            change(&mut other);
            let (m, k) = diff_maps(&[other.clone()], std::slice::from_ref(&l));
            assert_eq!((m, k), (vec![other], vec![l.clone()]), "field {i}");
        }
        // An unknown device and inode (a synthetic file) matches any.
        let unknown = MapsLine {
            file_id: None,
            ..l.clone()
        };
        assert_eq!(
            diff_maps(&[unknown], std::slice::from_ref(&l)),
            (vec![], vec![])
        );
        // [vsyscall] is the kernel's alone.
        let vsyscall =
            parse_maps("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n")
                .unwrap();
        assert_eq!(diff_maps(&[], &vsyscall), (vec![], vec![]));
    }

    #[test]
    fn a_line_prints_as_the_kernel_prints_it() {
        let text = std::fs::read_to_string("/proc/self/maps").unwrap();
        let lines = parse_maps(&text).unwrap();
        assert!(lines.len() > 5);
        for l in &lines {
            let again = parse_maps(&l.to_string()).unwrap();
            assert_eq!(again, std::slice::from_ref(l));
        }
        assert_eq!(
            line().to_string(),
            "7ffff7d1c000-7ffff7d42000 r--p 00001000 fe:00 326269 /usr/lib/libc.so.6"
        );
        assert_eq!(parse_maps("1000-2000 r--x 0 00:00 0\n"), None, "no p or s");
    }

    #[test]
    fn a_changed_file_is_one_entry_and_other_differences_stay_lines() {
        let model = parse_maps(
            "1000-2000 r--p 00000000 fe:00 9 /lib/a.so\n\
             2000-3000 r-xp 00001000 fe:00 9 /lib/a.so\n\
             5000-6000 rw-p 00000000 00:00 0\n",
        )
        .unwrap();
        let real = parse_maps(
            "1000-2000 r--p 00000000 fe:00 8 /lib/a.so\n\
             2000-3000 r-xp 00001000 fe:00 8 /lib/a.so\n\
             5000-7000 rw-p 00000000 00:00 0\n",
        )
        .unwrap();
        let (m, k) = diff_maps(&model, &real);
        assert_eq!(
            describe_differences(&m, &k),
            [
                "file /lib/a.so changed since it was recorded: device and inode fe:00 8 in the \
                 recorded maps, fe:00 9 now (2 areas, 00001000-00003000)",
                "model only:  00005000-00006000 rw-p 00000000 00:00 0",
                "kernel only: 00005000-00007000 rw-p 00000000 00:00 0",
            ]
        );
    }

    fn anon(start: u64, end: u64, kind: AnonKind) -> Vma {
        Vma {
            start,
            end,
            prot: Prot::RW,
            flags: VmFlags::default(),
            backing: Backing::Anon(kind),
            link: None,
        }
    }

    #[test]
    fn heap_and_stack_are_named_by_address_as_linux_does() {
        let p = PAGE_SIZE;
        let layout = Layout {
            vmas: vec![
                // The bss right below the heap: it ends at start_brk, not named.
                anon(0x10 * p, 0x20 * p, AnonKind::Plain),
                anon(0x20 * p, 0x22 * p, AnonKind::Heap),
                // A plain area inside the break's range: [heap] too.
                anon(0x22 * p, 0x23 * p, AnonKind::Plain),
                // A heap piece past the break (brk shrank under it): not named.
                anon(0x23 * p, 0x24 * p, AnonKind::Heap),
                // The low part of the stack, cut off from start_stack: not named.
                anon(0x100 * p, 0x110 * p, AnonKind::Stack),
                // A new mapping over the top of the stack holds start_stack: [stack].
                anon(0x110 * p, 0x121 * p, AnonKind::Plain),
                anon(0x200 * p, 0x202 * p, AnonKind::Vdso),
            ],
            start_stack: 0x120 * p + 0x800,
            start_brk: 0x20 * p,
            brk: 0x22 * p + 0x10,
            deleted: Vec::new(),
        };
        let names: Vec<String> = layout.maps().into_iter().map(|l| l.name).collect();
        assert_eq!(names, ["", "[heap]", "[heap]", "", "", "[stack]", "[vdso]"]);
        // start_stack on an area's end counts (both ends are inclusive).
        let edge = Layout {
            start_stack: 0x110 * p,
            ..layout.clone()
        };
        let names: Vec<String> = edge.maps().into_iter().map(|l| l.name).collect();
        assert_eq!(names[4..6], ["[stack]", "[stack]"]);
    }
}
