//! Processes and the address spaces they use: `fork` copies one, `vfork`,
//! `posix_spawn` and threads (`CLONE_VM`) share one, `execve` and exit release one.
//!
//! An [`Mm`] counts the processes that use it ([`Mm::users`], the kernel's
//! `mm_users`). A [`Process`] holds one of those uses: [`Process::clone_vm`] adds a
//! user to the same space; [`Process::exec`] gives the process a new space and
//! releases the old one; [`Process::exit`] (or dropping the process) releases its
//! space. Released by its last user, a space is torn down as at exit (every VMA
//! unlinked from its file's reverse map); released by any other user, it is left
//! exactly as it was. So a vfork child that execs or exits leaves its parent's
//! layout and reverse-map entries untouched, as Linux does.

use crate::error::Error;
use crate::files::Files;
use crate::program::Program;
use crate::Mm;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One process's hold on an address space (a task's `mm` pointer).
///
/// ```
/// use mm::{CallPattern, Files, Process};
/// use rmap::{Design, Topology};
/// use std::path::Path;
///
/// let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
/// let mut shell = Process::new(files.clone());
/// shell.exec(Path::new("/bin/sh"))?;
/// let before = shell.mm().vmas();
/// // vfork: the child runs in the parent's address space...
/// let mut child = shell.clone_vm();
/// assert!(std::sync::Arc::ptr_eq(child.mm(), shell.mm()));
/// assert_eq!(shell.mm().users(), 2);
/// // ...until it execs: it gets a space of its own, the parent's is left alone.
/// child.exec(Path::new("/bin/true"))?;
/// assert_eq!(shell.mm().users(), 1);
/// child.exit();
/// let after = shell.mm().vmas();
/// assert_eq!(after.len(), before.len());
/// assert!(after.iter().zip(&before).all(|(a, b)| (a.start, a.end, a.prot) == (b.start, b.end, b.prot)));
/// # Ok::<(), mm::Error>(())
/// ```
///
/// # Concurrency
/// `Process` is `Send + Sync`; changing which space it uses (`exec`) takes `&mut
/// self`. The user count is atomic, so processes sharing one space may exit, exec or
/// `clone_vm` on different threads: exactly one of them, the last, tears it down.
///
/// # Cost
/// One `Arc<Mm>`. `clone_vm` costs an atomic increment; `fork` copies the space
/// ([`Mm::fork`]).
#[derive(Debug)]
pub struct Process {
    mm: Arc<Mm>,
}

impl Process {
    /// A process with an empty address space of its own, whose file mappings go into
    /// `files`.
    pub fn new(files: Arc<Files>) -> Process {
        Process::from(Mm::new(files))
    }

    /// The address space this process uses.
    pub fn mm(&self) -> &Arc<Mm> {
        &self.mm
    }

    /// `fork()`: a child with a copy of this process's address space ([`Mm::fork`]).
    pub fn fork(&self) -> Process {
        Process::from(self.mm.fork())
    }

    /// `vfork()`, `posix_spawn` or a thread (`clone(CLONE_VM)`): a child that uses
    /// this process's address space, one more user of it.
    pub fn clone_vm(&self) -> Process {
        // Relaxed: this process holds a use for the whole call, so the count is at
        // least 1 and cannot reach 0 meanwhile; the increment only needs to be atomic
        // (as `Arc::clone`).
        self.mm.users.fetch_add(1, Ordering::Relaxed);
        Process {
            mm: self.mm.clone(),
        }
    }

    /// `execve(path)`: resolves and plans the program (nothing changes if that
    /// fails), then gives this process a new address space with the program's image
    /// and releases the old one (torn down only if this process was its last user).
    pub fn exec(&mut self, path: &Path) -> Result<(), Error> {
        let prog = self.mm.files().program(path)?;
        self.exec_program(&prog);
        Ok(())
    }

    /// `execve` of a planned program: a new address space with `prog`'s image (see
    /// [`Mm::exec_program`]); the old one is released. Cannot fail.
    pub fn exec_program(&mut self, prog: &Program) {
        self.exec_with(|mm| mm.exec_program(prog));
    }

    /// Gives this process a new, empty address space, releases the old one (the
    /// kernel's `exec_mmap`: the new space replaces the old before the image is
    /// loaded), then builds the new image with `build`.
    pub(crate) fn exec_with(&mut self, build: impl FnOnce(&Mm)) {
        let new = Arc::new(Mm::new(self.mm.files().clone()));
        let old = std::mem::replace(&mut self.mm, new);
        release(&old);
        build(&self.mm);
    }

    /// `exit()`: releases the address space (torn down if this was its last user).
    /// The same as dropping the process.
    pub fn exit(self) {}
}

impl From<Mm> for Process {
    /// The process that uses `mm` (its first and only user).
    fn from(mm: Mm) -> Process {
        Process { mm: Arc::new(mm) }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        release(&self.mm);
    }
}

/// Drops one use of `mm`; the last user tears it down (`mmput` -> `exit_mmap`).
fn release(mm: &Mm) {
    // AcqRel: every other user's release happens-before the last one's teardown
    // (Release on each decrement, Acquire on the one that sees 1), as `Arc`'s drop.
    // The teardown itself also takes the space's lock.
    if mm.users.fetch_sub(1, Ordering::AcqRel) == 1 {
        mm.exit();
    }
}
