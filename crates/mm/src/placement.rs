//! Where a non-fixed `mmap` (or a moving `mremap`) goes: the kernel's
//! `get_unmapped_area`, top-down below [`crate::layout::MMAP_BASE`], with the address
//! hint honoured when that range is free, and, behind [`Placement`], the transparent
//! huge-page alignment of `thp_get_unmapped_area`.
//!
//! The huge-page rule, as documented for Linux 6.7 and later (`mm/huge_memory.c`,
//! `mm/mmap.c`): a request is padded by 2 MiB, the highest gap that fits the padded
//! length is taken, and the start is moved up so that `addr ≡ file offset (mod 2 MiB)`;
//! when the padded gap's start is already so aligned, the top-down search returns it
//! plus 2 MiB. It applies only when the file range `[off, off + len)` holds a whole
//! aligned 2 MiB block. File mappings take it when the file system's
//! `get_unmapped_area` is `thp_get_unmapped_area` (ext4, xfs); anonymous private
//! mappings without a hint take it when their length is a multiple of 2 MiB.

use crate::layout::{MMAP_BASE, MMAP_MIN_ADDR, TASK_SIZE};
use crate::{Error, Vma, PAGE_SIZE};
use maple::{Inline, MapleTree};
use std::sync::Arc;

/// The size of a PMD-mapped transparent huge page (x86-64).
pub const PMD_SIZE: u64 = 2 << 20;

/// The placement policy for non-fixed mappings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Align file mappings as `thp_get_unmapped_area` does.
    pub thp_file: bool,
    /// Align anonymous private mappings whose length is a multiple of 2 MiB.
    pub thp_anon: bool,
    /// Skip the anonymous alignment for `VM_NOHUGEPAGE` requests (`MAP_STACK`). Off
    /// in [`Placement::LINUX_THP`]: Linux 6.18 still aligns a 4 MiB `MAP_STACK` area
    /// (measured with `tests/data/thp_probe.c`, `gcc thp_probe.c && setarch -R ./a.out`).
    pub thp_skip_nohugepage: bool,
}

impl Default for Placement {
    /// Plain top-down, no huge-page alignment (the model's historical behaviour).
    fn default() -> Placement {
        Placement::TOP_DOWN
    }
}

impl Placement {
    /// Top-down first fit, no alignment.
    pub const TOP_DOWN: Placement = Placement {
        thp_file: false,
        thp_anon: false,
        thp_skip_nohugepage: false,
    };

    /// Linux 6.7+ on x86-64 with `CONFIG_TRANSPARENT_HUGEPAGE` and files on ext4/xfs.
    pub const LINUX_THP: Placement = Placement {
        thp_file: true,
        thp_anon: true,
        thp_skip_nohugepage: false,
    };
}

/// One placement request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub(crate) hint: u64,
    pub(crate) len: u64,
    /// The file page offset, for a file mapping.
    pub(crate) pgoff: Option<u64>,
    pub(crate) shared: bool,
    pub(crate) nohugepage: bool,
}

fn free(tree: &MapleTree<Arc<Vma>, Inline>, start: u64, len: u64) -> bool {
    start >= MMAP_MIN_ADDR
        && start % PAGE_SIZE == 0
        && start.checked_add(len).is_some_and(|end| {
            end <= TASK_SIZE && tree.reader().range(start, end - 1).next().is_none()
        })
}

fn top_down(tree: &MapleTree<Arc<Vma>, Inline>, len: u64) -> Option<u64> {
    tree.empty_area_rev(MMAP_MIN_ADDR, MMAP_BASE - 1, len).ok()
}

/// The address the kernel would give `req` in `tree` under `policy`. `NoSpace` when
/// nothing fits. Reads the tree only.
pub(crate) fn unmapped_area(
    tree: &MapleTree<Arc<Vma>, Inline>,
    req: Request,
    policy: Placement,
) -> Result<u64, Error> {
    let aligned = match req.pgoff {
        Some(_) => policy.thp_file,
        None => {
            policy.thp_anon
                && !req.shared
                && req.hint == 0
                && req.len % PMD_SIZE == 0
                && !(policy.thp_skip_nohugepage && req.nohugepage)
        }
    };
    if aligned {
        if let Some(a) = thp_area(tree, req) {
            return Ok(a);
        }
    }
    if req.hint != 0 && free(tree, req.hint, req.len) {
        return Ok(req.hint);
    }
    top_down(tree, req.len).ok_or(Error::NoSpace { len: req.len })
}

/// `__thp_get_unmapped_area`; `None` sends the caller to the plain search.
fn thp_area(tree: &MapleTree<Arc<Vma>, Inline>, req: Request) -> Option<u64> {
    let off = req.pgoff.unwrap_or(0).checked_mul(PAGE_SIZE)?;
    let off_end = off.checked_add(req.len)?;
    let off_align = off.checked_add(PMD_SIZE - 1)? & !(PMD_SIZE - 1);
    if off_end <= off_align || off_end - off_align < PMD_SIZE {
        return None;
    }
    let len_pad = req.len.checked_add(PMD_SIZE)?;
    off.checked_add(len_pad)?;
    let ret = if req.hint != 0 && free(tree, req.hint, len_pad) {
        return Some(req.hint);
    } else {
        top_down(tree, len_pad)?
    };
    let off_sub = off.wrapping_sub(ret) & (PMD_SIZE - 1);
    Some(if off_sub == 0 {
        ret + PMD_SIZE
    } else {
        ret + off_sub
    })
}
