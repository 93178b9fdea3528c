//! A planned exec: the program's objects and the exact sequence of calls that builds
//! its image ([`ExecStep`]s), as [`crate::exec`] planned and checked it.
//!
//! Plain data, immutable once built: the registry caches one per path
//! ([`crate::Files::program`]) and every exec of the path replays it.

use crate::elf::ElfImage;
use crate::file::File;
use crate::ldso::{Linkage, LoadPlan};
use crate::vma::{Backing, Prot};
use std::sync::Arc;

/// Who makes a call of the exec sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The kernel's ELF loader (invisible to strace).
    Kernel,
    /// ld.so (each step is one system call strace shows).
    LdSo,
    /// The model's initial heap (a process after its first `malloc`).
    Model,
}

/// One call of the exec sequence, with the address it gets.
#[derive(Clone, Debug)]
pub enum ExecStep {
    /// `mmap` of `[start, end)`: replaces whatever is there (`MAP_FIXED`) or lands in
    /// a range the plan knows is free.
    Map {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Protection.
        prot: Prot,
        /// The file and its page offset, or an anonymous kind.
        backing: Backing,
        /// Whether the call passes `MAP_FIXED` (else the plan chose the address as
        /// the kernel's top-down search would).
        fixed: bool,
        /// Who calls.
        caller: Caller,
    },
    /// `mprotect([start, end), prot)` of a fully mapped range.
    Protect {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// The new protection.
        prot: Prot,
        /// Who calls.
        caller: Caller,
    },
    /// `munmap([start, end))`.
    Unmap {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Who calls.
        caller: Caller,
    },
}

impl ExecStep {
    /// Who makes this call.
    pub fn caller(&self) -> Caller {
        match self {
            ExecStep::Map { caller, .. }
            | ExecStep::Protect { caller, .. }
            | ExecStep::Unmap { caller, .. } => *caller,
        }
    }

    /// The range the call covers.
    pub fn range(&self) -> (u64, u64) {
        match self {
            ExecStep::Map { start, end, .. }
            | ExecStep::Protect { start, end, .. }
            | ExecStep::Unmap { start, end, .. } => (*start, *end),
        }
    }
}

/// An executable with its interpreter and libraries resolved, registered, and its
/// whole exec sequence planned and checked: what [`crate::Mm::exec_program`] replays.
/// Immutable; cheap to share (`Arc<Program>`), `Send + Sync`.
#[derive(Debug)]
pub struct Program {
    pub(crate) plan: LoadPlan,
    /// (image, file) pairs in mapping order: executable, interpreter, libraries.
    pub(crate) objects: Vec<(Arc<ElfImage>, Arc<File>)>,
    pub(crate) steps: Vec<ExecStep>,
    pub(crate) brk_start: u64,
    pub(crate) heap_end: Option<u64>,
    /// The top of the mmap area it was planned under.
    pub(crate) mmap_base: u64,
    /// Whether exec was given a `#!` script, whose interpreter this is.
    pub(crate) via_script: bool,
}

impl Program {
    /// The top of the mmap area the exec was planned under
    /// ([`crate::layout::mmap_base`]).
    pub fn mmap_base(&self) -> u64 {
        self.mmap_base
    }

    /// The resolved load plan.
    pub fn plan(&self) -> &LoadPlan {
        &self.plan
    }

    /// How the executable is linked. A static program maps no libc and no ld.so, so
    /// it shows none of the libraries' reverse-map contention; callers that measure
    /// that should say so or refuse it.
    pub fn linkage(&self) -> Linkage {
        self.plan.linkage()
    }

    /// The files in mapping order: executable, interpreter, then libraries.
    pub fn files(&self) -> impl Iterator<Item = &Arc<File>> {
        self.objects.iter().map(|(_, f)| f)
    }

    /// Every file the exec sequence maps, each once, in the order of its
    /// first mapping: the ELF objects of [`Program::files`] and the others
    /// ld.so maps on the way, such as `/etc/ld.so.cache` (mapped, read and
    /// unmapped by every dynamically linked exec, so its reverse map is as
    /// shared as libc's).
    pub fn mapped_files(&self) -> Vec<&Arc<File>> {
        let mut out: Vec<&Arc<File>> = Vec::new();
        for step in &self.steps {
            if let ExecStep::Map {
                backing: Backing::File { file, .. },
                ..
            } = step
            {
                if !out.iter().any(|f| Arc::ptr_eq(f, file)) {
                    out.push(file);
                }
            }
        }
        out
    }

    /// The exec sequence, in order.
    pub fn steps(&self) -> &[ExecStep] {
        &self.steps
    }

    /// Where the brk starts after exec.
    pub fn brk_start(&self) -> u64 {
        self.brk_start
    }
}
