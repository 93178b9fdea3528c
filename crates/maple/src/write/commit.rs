//! Committing a write: the gap refresh, the publish, and the retirement of
//! what the write replaced (deferred through the epoch, or at once under
//! `&mut`).

use super::*;

impl<T> Txn<'_, T> {
    // ----- commit --------------------------------------------------------------

    /// Recomputes the gaps of dirty children below `node`; returns its gap.
    ///
    /// # Safety
    /// `node` is valid; only fresh nodes have dirty bits.
    pub(super) unsafe fn refresh(node: NodePtr, lo: u64, hi: u64) -> u64 {
        // SAFETY: forwarded; writes go only to nodes with dirty bits (fresh).
        unsafe {
            if is_leaf(node) {
                return leaf_gap(node.cast::<Leaf<T>>(), lo, hi);
            }
            let int = &mut *node.cast::<Internal>();
            if int.hdr.dirty != 0 {
                let n = int.hdr.count as usize;
                for i in 0..n {
                    if int.hdr.dirty & (1 << i) != 0 {
                        let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
                        int.set_gap(i, Self::refresh(int.child(i), s, e));
                    }
                }
                int.hdr.dirty = 0;
            }
            internal_gap(int)
        }
    }

    /// Publishes the working root and retires what it replaced. `guard` is
    /// `None` in exclusive mode, where retired memory is freed at once.
    pub(crate) fn commit(self, publish: impl FnOnce(NodePtr), guard: Option<&Guard>) -> Committed
    where
        T: SlotOps + Send + 'static,
    {
        if !self.root.is_null() && !self.only_exact_fits {
            // SAFETY: the working root is valid and only fresh nodes are dirty.
            unsafe { Self::refresh(self.root, 0, u64::MAX) };
        }
        let st = self.st;
        // Fresh nodes retired inside this write were never visible: mark them
        // so they are freed at once below instead of deferred. Mark before
        // the FRESH flags are cleared.
        if !self.exclusive {
            for &p in &st.retired_nodes {
                // SAFETY: retired nodes stay allocated until after publish.
                unsafe {
                    if (*p).flags & FRESH != 0 {
                        (*p).flags = DEAD;
                    }
                }
            }
            for &p in &st.fresh {
                // SAFETY: fresh nodes are allocated and not yet visible.
                unsafe {
                    if (*p).flags == FRESH {
                        (*p).flags = 0;
                    }
                }
            }
        }
        st.fresh.clear();
        publish(self.root);
        match guard {
            Some(guard) => {
                // Free the never-published nodes now; retire the rest as one
                // deferred batch per write: a bag holds 64 deferred calls,
                // so batching keeps bags (and the fences and advances that
                // seal them) few; with crossbeam-epoch, which ran deferred
                // calls at a pace tied to pins, one call per node fell
                // behind a busy writer.
                // Never-published nodes go straight back to the pool; the
                // rest are listed in retire-list blocks and handed to
                // writers after the grace period (see `node::RetireList`).
                let mut retired = std::mem::take(&mut st.retired_nodes);
                retired.retain(|&p| {
                    // SAFETY: retired nodes stay allocated until handed on here.
                    if unsafe { (*p).flags } == DEAD {
                        // SAFETY: never published, so unreachable.
                        unsafe { st.pool.keep(p) };
                        false
                    } else {
                        true
                    }
                });
                // SAFETY: every listed node is unlinked from the new version;
                // readers that still hold the old one are pinned, so the
                // recycling below waits for them.
                let batch = if retired.is_empty() {
                    None
                } else {
                    unsafe { st.pool.list_retired(retired.drain(..)) }
                };
                st.retired_nodes = retired;
                if let Some(batch) = batch {
                    // SAFETY: as above.
                    unsafe {
                        st.defer(guard, move || {
                            let batch = batch;
                            batch.recycle();
                        })
                    };
                }
                if st.retired_values.len() == 1 {
                    // The common case (an overwrite): no batch vector to
                    // allocate and free.
                    let one = SendPtr(st.retired_values[0]);
                    st.retired_values.clear();
                    // The box goes back to this (the writing) thread.
                    let home = T::home();
                    // SAFETY: as below.
                    unsafe {
                        st.defer(guard, move || {
                            let one = one;
                            T::retire_word(one.0, home);
                        })
                    };
                } else if !st.retired_values.is_empty() {
                    let batch = SendPtr(std::mem::take(&mut st.retired_values));
                    let home = T::home();
                    // SAFETY: as above; each value is owned by the tree alone.
                    unsafe {
                        st.defer(guard, move || {
                            let batch = batch;
                            for v in batch.0 {
                                T::retire_word(v, home);
                            }
                        })
                    };
                }
            }
            None => {
                let retired = std::mem::take(&mut st.retired_nodes);
                for &p in &retired {
                    // SAFETY: exclusive mode: no reader can hold p; reuse it.
                    unsafe { st.pool.keep(p) };
                }
                st.retired_nodes = retired;
                st.retired_nodes.clear();
                for v in st.retired_values.drain(..) {
                    // SAFETY: exclusive mode: no reader can hold v. No home
                    // needed: this is the writing thread, and a box goes to
                    // its pool if it pools the layout.
                    unsafe { T::retire_word(v, None) };
                }
            }
        }
        Committed {
            len_delta: self.len_delta,
            nodes_delta: self.nodes_delta,
        }
    }
}
