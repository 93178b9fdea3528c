//! Virtual memory areas: what one entry of a process's maple tree holds.

use crate::file::File;
use crate::PAGE_SIZE;
use rmap::{Handle, VmaId};
use std::fmt;
use std::sync::Arc;

/// Page protection, as `PROT_READ | PROT_WRITE | PROT_EXEC`.
///
/// ```
/// use mm::Prot;
///
/// assert_eq!(Prot::from_maps("r-xp"), Some(Prot::RX));
/// assert_eq!(Prot::RW.to_string(), "rw-");
/// assert_eq!(Prot::from_maps("r"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Prot {
    /// `PROT_READ`.
    pub read: bool,
    /// `PROT_WRITE`.
    pub write: bool,
    /// `PROT_EXEC`.
    pub exec: bool,
}

impl Prot {
    /// `PROT_NONE`.
    pub const NONE: Prot = Prot::new(false, false, false);
    /// `PROT_READ`.
    pub const R: Prot = Prot::new(true, false, false);
    /// `PROT_READ | PROT_WRITE`.
    pub const RW: Prot = Prot::new(true, true, false);
    /// `PROT_READ | PROT_EXEC`.
    pub const RX: Prot = Prot::new(true, false, true);

    /// Builds a protection from its three bits.
    pub const fn new(read: bool, write: bool, exec: bool) -> Prot {
        Prot { read, write, exec }
    }

    /// Parses the first three characters of a `/proc/PID/maps` permission field,
    /// e.g. `"r-xp"`.
    pub fn from_maps(perms: &str) -> Option<Prot> {
        let b = perms.as_bytes();
        if b.len() < 3 {
            return None;
        }
        Some(Prot::new(b[0] == b'r', b[1] == b'w', b[2] == b'x'))
    }
}

impl fmt::Display for Prot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = |on, ch| if on { ch } else { '-' };
        write!(
            f,
            "{}{}{}",
            c(self.read, 'r'),
            c(self.write, 'w'),
            c(self.exec, 'x')
        )
    }
}

/// The VMA flags the model tracks; they take part in merging, as in Linux.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VmFlags {
    /// `MAP_SHARED` (else private).
    pub shared: bool,
    /// `VM_ACCOUNT`: a private mapping that was writable at some point. Set on mmap
    /// or on mprotect adding write, never cleared by mprotect, so a RELRO piece
    /// (rw- made r--) does not merge with the r-- segment before it, as on Linux.
    /// `MAP_NORESERVE` leaves it clear.
    pub account: bool,
    /// `VM_NORESERVE` (`MAP_NORESERVE`, with overcommit not disabled): never
    /// accounted, not even when mprotect adds write.
    pub noreserve: bool,
    /// `VM_HUGEPAGE` (`madvise(MADV_HUGEPAGE)`).
    pub hugepage: bool,
    /// `VM_NOHUGEPAGE` (`madvise(MADV_NOHUGEPAGE)`, or `MAP_STACK` on kernels >= 6.7).
    pub nohugepage: bool,
    /// `VM_DONTCOPY` (`madvise(MADV_DONTFORK)`).
    pub dontcopy: bool,
    /// `VM_DONTDUMP` (`madvise(MADV_DONTDUMP)`).
    pub dontdump: bool,
    /// `VM_WIPEONFORK` (`madvise(MADV_WIPEONFORK)`).
    pub wipeonfork: bool,
    /// `VM_LOCKED`: `mlock`, `mlock2`, `mlockall(MCL_CURRENT)`, `mmap(MAP_LOCKED)`, or a
    /// new mapping under `mlockall(MCL_FUTURE)` ([`crate::mlock`]). A fork's child does
    /// not inherit it.
    pub locked: bool,
    /// `VM_LOCKONFAULT`: with `locked`, pages are locked as they fault in
    /// (`mlock2(MLOCK_ONFAULT)`, `mlockall(MCL_ONFAULT)`).
    pub lockonfault: bool,
    /// `VM_RAND_READ` (`madvise(MADV_RANDOM)`).
    pub rand_read: bool,
    /// `VM_SEQ_READ` (`madvise(MADV_SEQUENTIAL)`).
    pub seq_read: bool,
    /// `VM_MERGEABLE` (`madvise(MADV_MERGEABLE)`: KSM may merge its pages).
    pub mergeable: bool,
    /// `VM_DROPPABLE` (`MAP_DROPPABLE`, Linux >= 6.11: pages the kernel may drop
    /// under memory pressure; glibc >= 2.41 and Go >= 1.24 keep their vDSO
    /// `getrandom` states in such an area).
    pub droppable: bool,
    /// `VM_SEALED` (`mseal`, Linux >= 6.10): the area cannot be unmapped, moved,
    /// mapped over, reprotected, or (read-only anonymous memory) discarded
    /// ([`crate::seal`]).
    pub sealed: bool,
    /// The protection key (`pkey_mprotect`; 0: the default key), which `mprotect`
    /// keeps.
    pub pkey: u8,
    /// The area's NUMA memory policy (`mbind`; the default: none).
    pub policy: MemPolicy,
}

/// A VMA's NUMA memory policy (`struct mempolicy`, set by `mbind`): areas merge only
/// with an equal one (`mpol_equal`). The nodes are compared as the caller gave them
/// (the first 64), not as the machine's online nodes narrow them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemPolicy {
    /// The mode with its flags (`MPOL_BIND`, `MPOL_INTERLEAVE | MPOL_F_STATIC_NODES`,
    /// ...); 0 (`MPOL_DEFAULT`): no policy of the area's own.
    pub mode: u16,
    /// The node mask's first word (0 for a mode without nodes).
    pub nodes: u64,
}

impl MemPolicy {
    /// `MPOL_DEFAULT`: the area has no policy.
    pub const DEFAULT: u16 = 0;
    /// `MPOL_PREFERRED`.
    pub const PREFERRED: u16 = 1;
    /// `MPOL_LOCAL`.
    pub const LOCAL: u16 = 4;
    /// The mode bits of a mode with flags (`MPOL_MODE_FLAGS` cleared).
    const MODE_MASK: u16 = 0x1fff;

    /// The policy `mbind(mode, nodes)` gives an area, as `mpol_new` makes it: none
    /// for `MPOL_DEFAULT`, `MPOL_LOCAL` for `MPOL_PREFERRED` without nodes, and no
    /// nodes kept for `MPOL_LOCAL`.
    pub fn new(mode: u16, nodes: u64) -> MemPolicy {
        match mode & Self::MODE_MASK {
            Self::DEFAULT => MemPolicy::default(),
            Self::PREFERRED if nodes == 0 => MemPolicy {
                mode: Self::LOCAL | (mode & !Self::MODE_MASK),
                nodes: 0,
            },
            Self::LOCAL => MemPolicy { mode, nodes: 0 },
            _ => MemPolicy { mode, nodes },
        }
    }
}

impl VmFlags {
    /// These flags with the lock bits (`VM_LOCKED`, `VM_LOCKONFAULT`: the kernel's
    /// `VM_LOCKED_MASK`) of `lock` in place of their own.
    ///
    /// ```
    /// use mm::VmFlags;
    ///
    /// let locked = VmFlags { locked: true, ..VmFlags::default() };
    /// let f = VmFlags { shared: true, lockonfault: true, ..VmFlags::default() };
    /// assert_eq!(f.with_lock(locked), VmFlags { shared: true, locked: true, ..VmFlags::default() });
    /// assert_eq!(f.with_lock(VmFlags::default()), VmFlags { shared: true, ..VmFlags::default() });
    /// ```
    pub fn with_lock(self, lock: VmFlags) -> VmFlags {
        VmFlags {
            locked: lock.locked,
            lockonfault: lock.lockonfault,
            ..self
        }
    }

    /// Only the lock bits of these flags (the rest clear).
    pub fn lock_bits(self) -> VmFlags {
        VmFlags::default().with_lock(self)
    }

    /// A new area's flags with the space's default lock bits `def`
    /// ([`crate::Mm::def_flags`]) ORed in, as `do_mmap` and `do_brk_flags` do;
    /// `mmap_region` clears them again where `vma_supports_mlock` says no
    /// (`MAP_DROPPABLE` memory; a new area is never a special one).
    pub(crate) fn with_default_lock(self, def: VmFlags) -> VmFlags {
        if self.droppable {
            return self;
        }
        VmFlags {
            locked: self.locked || def.locked,
            lockonfault: self.lockonfault || def.lockonfault,
            ..self
        }
    }
}

/// What an anonymous area is for; areas of different kinds never merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnonKind {
    /// Plain anonymous memory (`mmap(MAP_ANONYMOUS)`, bss).
    Plain,
    /// `[heap]`, grown by `brk`.
    Heap,
    /// `[stack]`.
    Stack,
    /// `[vvar]`: the vdso's data pages.
    Vvar,
    /// `[vvar_vclock]`: the vdso's clock pages (their own area since Linux 6.13; it
    /// never merges with `[vvar]`, whose kind differs).
    VvarVclock,
    /// `[vdso]`.
    Vdso,
}

impl AnonKind {
    /// The name `/proc/PID/maps` prints for it, if any.
    pub fn name(self) -> Option<&'static str> {
        match self {
            AnonKind::Plain => None,
            AnonKind::Heap => Some("[heap]"),
            AnonKind::Stack => Some("[stack]"),
            AnonKind::Vvar => Some("[vvar]"),
            AnonKind::VvarVclock => Some("[vvar_vclock]"),
            AnonKind::Vdso => Some("[vdso]"),
        }
    }
}

/// What backs a VMA.
#[derive(Clone, Debug)]
pub enum Backing {
    /// Anonymous memory.
    Anon(AnonKind),
    /// A file mapping starting at page `pgoff` of `file`.
    File {
        /// The file (shared by every process that maps it).
        file: Arc<File>,
        /// File offset of the VMA's first page, in pages.
        pgoff: u64,
    },
}

/// The reverse-map link of a file VMA: the handle its file's map gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) handle: Handle,
    pub(crate) id: VmaId,
}

/// One virtual memory area `[start, end)`.
///
/// Immutable once in the tree: a change (split, mprotect, merge) replaces the entry
/// with new `Vma`s and relinks them in the file's reverse map. 104 bytes on x86-64.
#[derive(Clone, Debug)]
pub struct Vma {
    /// First byte (page aligned).
    pub start: u64,
    /// One past the last byte (page aligned).
    pub end: u64,
    /// Protection.
    pub prot: Prot,
    /// Flags.
    pub flags: VmFlags,
    /// Anonymous or file.
    pub backing: Backing,
    pub(crate) link: Option<Link>,
}

impl Vma {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: a VMA covers at least one page.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Length in pages.
    pub fn pages(&self) -> u64 {
        self.len() / PAGE_SIZE
    }

    /// The file and page offset, for a file VMA.
    pub fn file(&self) -> Option<(&Arc<File>, u64)> {
        match &self.backing {
            Backing::File { file, pgoff } => Some((file, *pgoff)),
            Backing::Anon(_) => None,
        }
    }

    /// Whether the kernel maps it `VM_PFNMAP`: the vdso's data pages (`[vvar]`,
    /// `[vvar_vclock]`), not the vdso's code.
    pub fn is_pfnmap(&self) -> bool {
        matches!(
            self.backing,
            Backing::Anon(AnonKind::Vvar | AnonKind::VvarVclock)
        )
    }

    /// Whether `mlock` may lock it (`vma_supports_mlock`): not a special mapping,
    /// nor `MAP_DROPPABLE` memory. `mlock` and `mlockall` leave the others as they
    /// are, without error, and a new one gets no lock bits from `mlockall`'s
    /// default flags.
    pub fn supports_mlock(&self) -> bool {
        !self.is_special() && !self.flags.droppable
    }

    /// Whether this is one of the vdso's special mappings (`[vdso]`, `[vvar]`,
    /// `[vvar_vclock]`), which Linux never splits: a call that would cut one fails
    /// (`special_mapping_split`), and `mremap` may not grow one (`VM_DONTEXPAND`).
    pub fn is_special(&self) -> bool {
        matches!(
            self.backing,
            Backing::Anon(AnonKind::Vdso | AnonKind::Vvar | AnonKind::VvarVclock)
        )
    }

    /// The rmap id of this VMA, for a file VMA linked in its file's map.
    pub fn rmap_id(&self) -> Option<VmaId> {
        self.link.map(|l| l.id)
    }

    /// The piece `[start, end)` of this VMA (same attributes, pgoff moved along),
    /// unlinked.
    pub(crate) fn slice(&self, start: u64, end: u64) -> Vma {
        debug_assert!(self.start <= start && start < end && end <= self.end);
        let backing = match &self.backing {
            Backing::File { file, pgoff } => Backing::File {
                file: file.clone(),
                pgoff: pgoff + (start - self.start) / PAGE_SIZE,
            },
            b @ Backing::Anon(_) => b.clone(),
        };
        Vma {
            start,
            end,
            prot: self.prot,
            flags: self.flags,
            backing,
            link: None,
        }
    }

    /// Whether `next`, starting where this ends, could be one VMA with this one:
    /// same protection and flags, and the same anonymous kind or the same file at
    /// the following page offset.
    pub fn can_merge(&self, next: &Vma) -> bool {
        if self.end != next.start || self.prot != next.prot || self.flags != next.flags {
            return false;
        }
        match (&self.backing, &next.backing) {
            (Backing::Anon(a), Backing::Anon(b)) => a == b,
            (
                Backing::File {
                    file: f1,
                    pgoff: p1,
                },
                Backing::File {
                    file: f2,
                    pgoff: p2,
                },
            ) => Arc::ptr_eq(f1, f2) && p1 + self.pages() == *p2,
            _ => false,
        }
    }
}

/// Merges every adjacent mergeable pair of a sorted, non-overlapping list in place.
pub(crate) fn merge_adjacent(list: &mut Vec<Vma>) {
    let mut out: Vec<Vma> = Vec::with_capacity(list.len());
    for v in list.drain(..) {
        match out.last_mut() {
            Some(last) if last.can_merge(&v) => last.end = v.end,
            _ => out.push(v),
        }
    }
    *list = out;
}
