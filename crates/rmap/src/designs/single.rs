//! The body shared by the two single-tree Linux designs: everything except
//! where the lock sits relative to the tree.

/// Implements [`crate::ReverseMap`] for a struct with fields
/// `id: u32`, `counters: PaddedCounters` and a method
/// `fn lock(&self) -> &RwLock<impl DerefMut<Target = VmaTree>>`.
macro_rules! single_tree_map {
    ($ty:ty, $design:expr) => {
        impl $crate::ReverseMap for $ty {
            fn design(&self) -> $crate::Design {
                $design
            }

            fn insert(
                &self,
                iv: $crate::Interval,
                vma: $crate::VmaId,
            ) -> Result<$crate::Handle, $crate::RmapError> {
                let iv = iv.validate()?;
                let mut t = self.counters.write(self.lock());
                let (slot, gen) = t.insert(iv, vma);
                if t.recording() {
                    t.trace_entry(slot);
                }
                self.counters.set_len(t.len());
                Ok($crate::Handle::new(self.id, 0, slot, gen))
            }

            fn insert_after(
                &self,
                parent: $crate::Handle,
                iv: $crate::Interval,
                vma: $crate::VmaId,
            ) -> Result<$crate::Handle, $crate::RmapError> {
                let iv = iv.validate()?;
                if parent.map() != self.id {
                    return Err($crate::RmapError::ForeignHandle);
                }
                if parent.shard() != 0 {
                    return Err($crate::RmapError::UnknownHandle);
                }
                let mut t = self.counters.write(self.lock());
                let (slot, gen) = t.insert_after(parent.slot(), parent.gen(), iv, vma)?;
                if t.recording() {
                    t.trace_entry(slot);
                }
                self.counters.set_len(t.len());
                Ok($crate::Handle::new(self.id, 0, slot, gen))
            }

            fn check_handle(&self, h: $crate::Handle) -> Result<(), $crate::RmapError> {
                if h.map() != self.id {
                    return Err($crate::RmapError::ForeignHandle);
                }
                if h.shard() != 0 {
                    return Err($crate::RmapError::UnknownHandle);
                }
                let t = self.counters.read(self.lock());
                t.check(h.slot(), h.gen())
            }

            fn insert_after_batch(
                &self,
                items: &[($crate::Handle, $crate::Interval, $crate::VmaId)],
                out: &mut Vec<$crate::Handle>,
            ) -> Result<(), $crate::RmapError> {
                for &(p, iv, _) in items {
                    iv.validate()?;
                    if p.map() != self.id {
                        return Err($crate::RmapError::ForeignHandle);
                    }
                    if p.shard() != 0 {
                        return Err($crate::RmapError::UnknownHandle);
                    }
                }
                out.reserve(items.len());
                let mut t = self.counters.write(self.lock());
                for &(p, _, _) in items {
                    t.check(p.slot(), p.gen())?;
                }
                t.reserve(items.len());
                for &(p, iv, vma) in items {
                    let (slot, gen) = t.insert_after(p.slot(), p.gen(), iv, vma)?;
                    if t.recording() {
                        t.trace_entry(slot);
                    }
                    out.push($crate::Handle::new(self.id, 0, slot, gen));
                }
                self.counters.set_len(t.len());
                Ok(())
            }

            fn remove(&self, h: $crate::Handle) -> Result<(), $crate::RmapError> {
                if h.map() != self.id {
                    return Err($crate::RmapError::ForeignHandle);
                }
                if h.shard() != 0 {
                    return Err($crate::RmapError::UnknownHandle);
                }
                let mut t = self.counters.write(self.lock());
                t.check(h.slot(), h.gen())?;
                if t.recording() {
                    t.trace_entry(h.slot());
                }
                t.remove_checked(h.slot());
                self.counters.set_len(t.len());
                Ok(())
            }

            fn insert_batch(
                &self,
                items: &[($crate::Interval, $crate::VmaId)],
                out: &mut Vec<$crate::Handle>,
            ) -> Result<(), $crate::RmapError> {
                $crate::precheck_items(items)?;
                out.reserve(items.len());
                let mut t = self.counters.write(self.lock());
                t.reserve(items.len());
                for &(iv, vma) in items {
                    let (slot, gen) = t.insert(iv, vma);
                    out.push($crate::Handle::new(self.id, 0, slot, gen));
                }
                self.counters.set_len(t.len());
                Ok(())
            }

            fn remove_batch(&self, handles: &[$crate::Handle]) -> Result<(), $crate::RmapError> {
                $crate::precheck_batch(self.id, handles)?;
                if handles.iter().any(|h| h.shard() != 0) {
                    return Err($crate::RmapError::UnknownHandle);
                }
                let mut t = self.counters.write(self.lock());
                $crate::designs::tree_remove_batch(&mut t, handles)?;
                self.counters.set_len(t.len());
                Ok(())
            }

            fn walk(
                &self,
                range: $crate::Interval,
                f: &mut dyn FnMut($crate::Interval, $crate::VmaId),
            ) {
                if range.first > range.last {
                    return;
                }
                let t = self.counters.read(self.lock());
                t.walk(range, f);
            }

            fn len(&self) -> usize {
                self.counters.len()
            }

            fn memory_bytes(&self) -> usize {
                let t = self.lock().read();
                std::mem::size_of::<Self>() + t.heap_bytes()
            }

            fn stats(&self) -> $crate::LockStats {
                let mut s = $crate::LockStats {
                    shards: 1,
                    ..Default::default()
                };
                s.add(&self.counters);
                s
            }
        }
    };
}

pub(crate) use single_tree_map;
