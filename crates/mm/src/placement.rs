//! Where a non-fixed `mmap` (or a moving `mremap`) goes: the kernel's
//! `get_unmapped_area`, top-down below the mmap base ([`crate::layout::mmap_base`]:
//! [`crate::layout::MMAP_BASE`] under the default stack limit), with the address
//! hint honoured when that range is free, and, behind [`Placement`], the transparent
//! huge-page alignment of `thp_get_unmapped_area`. A `MAP_32BIT` request goes
//! bottom-up below 2 GiB instead ([`LOW_WINDOW`]), aligned by the same rule.
//!
//! The huge-page rule, as documented for Linux 6.7 and later (`mm/huge_memory.c`,
//! `mm/mmap.c`): a request is padded by 2 MiB, the highest gap that fits the padded
//! length is taken, and the start is moved up so that `addr ≡ file offset (mod 2 MiB)`;
//! when the padded gap's start is already so aligned, the top-down search returns it
//! plus 2 MiB. It applies only when the file range `[off, off + len)` holds a whole
//! aligned 2 MiB block. File mappings take it when the file system's
//! `get_unmapped_area` is `thp_get_unmapped_area` (ext4, xfs); anonymous private
//! mappings without a hint take it when their length is a multiple of 2 MiB.

use crate::layout::{MMAP_MIN_ADDR, TASK_SIZE};
use crate::{Error, VmaTree, PAGE_SIZE};

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
    /// The top of the mmap area ([`crate::layout::mmap_base`]).
    pub(crate) top: u64,
    pub(crate) hint: u64,
    pub(crate) len: u64,
    /// The file page offset, for a file mapping.
    pub(crate) pgoff: Option<u64>,
    pub(crate) shared: bool,
    pub(crate) nohugepage: bool,
    /// `MAP_32BIT` (x86-64): bottom-up in [`LOW_WINDOW`], the hint honoured only
    /// below its end.
    pub(crate) low: bool,
}

/// Where x86-64 places a `MAP_32BIT` mapping (`find_start_end`, ASLR off): bottom-up
/// first fit from 1 GiB below 2 GiB, so that code there is reachable in the small
/// code model.
pub const LOW_WINDOW: (u64, u64) = (0x4000_0000, 0x8000_0000);

fn free(tree: &VmaTree, start: u64, len: u64) -> bool {
    start >= MMAP_MIN_ADDR
        && start % PAGE_SIZE == 0
        && start
            .checked_add(len)
            .is_some_and(|end| end <= TASK_SIZE && !crate::occupied(tree, start, end))
}

fn top_down(tree: &VmaTree, top: u64, len: u64) -> Option<u64> {
    tree.empty_area_rev(MMAP_MIN_ADDR, top - 1, len).ok()
}

/// The address space's own search for `len` bytes with `req`'s hint: the hint if
/// that range is free, else top-down below `req.top`; for `MAP_32BIT`
/// (`arch_get_unmapped_area_topdown` sends it to the bottom-up
/// `arch_get_unmapped_area`) the hint only if it ends below the window's end, else
/// bottom-up first fit in [`LOW_WINDOW`].
fn search(tree: &VmaTree, req: Request, len: u64) -> Option<u64> {
    if req.low {
        let (begin, end) = LOW_WINDOW;
        if req.hint != 0
            && end.checked_sub(len).is_some_and(|l| req.hint <= l)
            && free(tree, req.hint, len)
        {
            return Some(req.hint);
        }
        return tree.empty_area(begin, end - 1, len).ok();
    }
    if req.hint != 0 && free(tree, req.hint, len) {
        return Some(req.hint);
    }
    top_down(tree, req.top, len)
}

/// The address the kernel would give `req` in `tree` under `policy`. `NoSpace` when
/// nothing fits. Reads the tree only.
pub(crate) fn unmapped_area(tree: &VmaTree, req: Request, policy: Placement) -> Result<u64, Error> {
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
    search(tree, req, req.len).ok_or(Error::NoSpace { len: req.len })
}

/// `__thp_get_unmapped_area` for `req` in `tree`; `None` sends the caller to the plain
/// search.
fn thp_area(tree: &VmaTree, req: Request) -> Option<u64> {
    let off = req.pgoff.unwrap_or(0).checked_mul(PAGE_SIZE)?;
    thp_top_down(off, req.len, req.hint, |len_pad| search(tree, req, len_pad))
}

/// The kernel's huge-page placement rule (`__thp_get_unmapped_area`, Linux 6.7+, an
/// mm that places top-down), shared by [`unmapped_area`] and the exec planner: for a
/// mapping of `len` bytes at file byte offset `off` whose file range holds a whole
/// PMD-aligned 2 MiB block, `search(len + PMD_SIZE)` (the address space's own search,
/// hint `hint` honoured) finds a padded area at `ret`, and the mapping goes at the
/// first address above `ret` congruent to `off` modulo [`PMD_SIZE`], or, when `ret`
/// itself is congruent, at `ret + PMD_SIZE`: the top of the padded area, as the
/// kernel's top-down branch does (`if (test_bit(MMF_TOPDOWN, ...) && !off_sub)
/// return ret + size`). A search that returns the hint keeps it. `None`, for the
/// caller's plain search, when the range holds no whole block, the padding overflows,
/// or no padded area fits.
pub(crate) fn thp_top_down(
    off: u64,
    len: u64,
    hint: u64,
    search: impl FnOnce(u64) -> Option<u64>,
) -> Option<u64> {
    let off_end = off.checked_add(len)?;
    let off_align = off.checked_add(PMD_SIZE - 1)? & !(PMD_SIZE - 1);
    if off_end <= off_align || off_end - off_align < PMD_SIZE {
        return None;
    }
    let len_pad = len.checked_add(PMD_SIZE)?;
    off.checked_add(len_pad)?;
    let ret = search(len_pad)?;
    if hint != 0 && ret == hint {
        return Some(hint);
    }
    let off_sub = off.wrapping_sub(ret) & (PMD_SIZE - 1);
    Some(if off_sub == 0 {
        ret + PMD_SIZE
    } else {
        ret + off_sub
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_rule_moves_up_to_the_offset_or_to_the_top_of_the_padded_area() {
        let len = 3 << 20;
        // A padded area at an address one page past a 2 MiB boundary, offset 0: the
        // mapping starts at the next boundary.
        let ret = 0x7fff_f760_1000;
        assert_eq!(
            thp_top_down(0, len, 0, |l| (l == len + PMD_SIZE).then_some(ret)),
            Some(0x7fff_f780_0000)
        );
        // Already congruent: the top of the padded area (ret + 2 MiB), not ret.
        let ret = 0x7fff_f760_0000;
        assert_eq!(thp_top_down(0, len, 0, |_| Some(ret)), Some(ret + PMD_SIZE));
        // Offset 1 MiB: congruent to 1 MiB.
        let at = thp_top_down(1 << 20, 4 << 20, 0, |_| Some(0x7fff_f000_0000)).unwrap();
        assert_eq!(at % PMD_SIZE, 1 << 20);
        // The hint kept when the search returns it.
        assert_eq!(
            thp_top_down(0, len, 0x7000_0000_1000, |_| Some(0x7000_0000_1000)),
            Some(0x7000_0000_1000)
        );
        // No whole aligned block in [off, off + len): not the huge-page rule.
        assert_eq!(thp_top_down(0, PMD_SIZE - PAGE_SIZE, 0, |_| Some(0)), None);
        assert_eq!(thp_top_down(PAGE_SIZE, PMD_SIZE, 0, |_| Some(0)), None);
        // No padded area: None (the caller searches for the plain length).
        assert_eq!(thp_top_down(0, len, 0, |_| None), None);
        // Overflowing padding: None, no panic.
        assert_eq!(thp_top_down(0, u64::MAX - PAGE_SIZE, 0, |_| Some(0)), None);
        assert_eq!(
            thp_top_down(u64::MAX - (4 << 20), 2 << 20, 0, |_| Some(0)),
            None
        );
    }
}
