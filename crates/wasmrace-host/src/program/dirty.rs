//! Snapshots and restores in proportion to what changed: the guest's
//! writes (instrumented: `load::track_dirty_pages`), Asyncify's buffer
//! writes (the trampolines) and the host's (`world::put_guest_bytes`) set
//! a byte per written 1 KiB block (`snapshot::BLOCK`) in a map in guest
//! memory. Between two synchronisations (a snapshot or a restore), memory
//! equals the page list of the last one (`WasmProgram::reference`) except
//! on the marked blocks; so a snapshot reads only the pages holding them,
//! and a restore writes only those blocks and the pages where the two page
//! lists differ (none for `reset`: the same list). Marks (`dirty`,
//! `carry`) are block indices; snapshots and digests stay in 4 KiB pages.

use super::hash::PageDigest;
use super::WasmProgram;
use crate::error::HostError;
use crate::snapshot::{self, PageTable, BLOCK, BLOCKS_PER_PAGE, PAGE};
use std::sync::Arc;
use wasmrace_explore::Status;

/// The most bytes the dirty-page map takes: a byte per block of 4 GiB.
const MAX_DIRTY_MAP_BYTES: u64 = 1 << 22;

/// The dirty-page map's length under `config`: a byte per block of
/// `max_memory_bytes` and one more (a store's second byte may mark the
/// block after the last), at most [`MAX_DIRTY_MAP_BYTES`].
pub(crate) fn dirty_map_bytes(config: &crate::config::HostConfig) -> u64 {
    (config.max_memory_bytes / BLOCK as u64 + 2).min(MAX_DIRTY_MAP_BYTES)
}

/// The map's place in guest memory: a byte per block of the most memory
/// the guest may have, and one more (a store's second byte may mark the
/// block after the last).
#[derive(Clone, Copy, Debug)]
pub(super) struct DirtyMap {
    pub base: u32,
    pub len: u32,
}

impl WasmProgram {
    /// Places the dirty-page map on a fresh instance of a tracked module,
    /// before any of the guest's code runs: the first memory the host
    /// grows, so that it lies at the same address in every instance.
    pub(super) fn place_dirty_map(&mut self) -> Result<(), HostError> {
        self.map = None;
        self.synced = false;
        self.stale_all_digests();
        let Some(g) = self.ex.dirty_base else {
            return Ok(());
        };
        let len = dirty_map_bytes(&self.guest.config);
        let grown = self
            .grow(len.div_ceil(65536))
            .ok()
            .and_then(|old| u32::try_from(old * 65536).ok());
        let Some(base) = grown else {
            return Err(crate::error::runtime(format!(
                "cannot place the dirty-page map (`{len}` bytes) in guest memory; raise --max-memory-mb"
            )));
        };
        // The marks' address is compiled into the guest's stores: the map
        // must land exactly there (memory's initial size), or marks would
        // write the guest's data.
        let want = g.get(&mut self.store).i32().map(|v| v as u32);
        if want != Some(base) {
            return Err(crate::error::runtime(format!(
                "the dirty-page map landed at `{base:#x}`, not at `{:#x}` where the module marks",
                want.unwrap_or(0)
            )));
        }
        self.store.data_mut().dirty_map = Some(base);
        self.map = Some(DirtyMap {
            base,
            len: len as u32,
        });
        Ok(())
    }

    /// Whether the next snapshot or restore may use the map: it is placed,
    /// every write of this instance is marked (a module without
    /// trampolines writes Asyncify's buffer unmarked), memory equalled
    /// `reference` at the last synchronisation, and the execution did not
    /// fail (a trap may stop a write's marking, or Asyncify's unwind,
    /// half-way).
    pub(super) fn tracks(&self) -> bool {
        let trampolines = match &self.ex.enter {
            Some(e) => self.ex.thread_start.is_none() || e.thread_start.is_some(),
            None => false,
        };
        self.map.is_some()
            && trampolines
            && self.synced
            && !matches!(self.progress.status, Status::Failed(_))
    }

    /// The blocks marked since the last synchronisation (and those carried
    /// over from it), into `self.dirty`; clears the map.
    fn take_dirty(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.clear();
        dirty.append(&mut self.carry);
        let from = dirty.len();
        self.drain_map(&mut dirty);
        if from > 0 && dirty.len() > from {
            // The state hash moved marks to `carry` (`hash_memory_cached`):
            // a block marked again is listed once.
            dirty.sort_unstable();
            dirty.dedup();
        }
        self.dirty = dirty;
    }

    /// Moves the map's marks to `carry`, for the next synchronisation:
    /// their pages' digests go stale, and a mark under a stack's low-water
    /// mark lowers it, so that what `known_zero` says next holds.
    pub(super) fn settle_marks(&mut self) {
        let mut marked = std::mem::take(&mut self.carry);
        self.drain_map(&mut marked);
        marked.sort_unstable();
        marked.dedup();
        self.carry = marked;
    }

    /// Appends the blocks marked in the map to `out`, staling their pages' cached
    /// digests, and clears the map.
    pub(super) fn drain_map(&mut self, out: &mut Vec<u32>) {
        let from = out.len();
        self.scan_map(out);
        let region = self.ex.stack_region;
        let async_bytes = self.guest.config.asyncify_buffer_bytes;
        for &b in &out[from..] {
            self.stale_digest(b as usize / BLOCKS_PER_PAGE);
            let addr = u32::try_from(b as usize * BLOCK).unwrap_or(u32::MAX);
            self.store
                .data_mut()
                .world
                .note_written(addr, region, async_bytes);
        }
    }

    /// Appends the blocks marked in the map to `out` and clears the map.
    fn scan_map(&mut self, out: &mut Vec<u32>) {
        let Some(map) = self.map else {
            return;
        };
        let mem = self.ex.memory.data_mut(&mut self.store);
        // A mark names a block of memory as it is: none lies past the real
        // size (and its one spill-over byte).
        let len = (map.len as usize).min(mem.len() / BLOCK + 1);
        let Some(bytes) = mem.get_mut(map.base as usize..map.base as usize + len) else {
            return;
        };
        // Marks are few and clustered: skip zero chunks with SIMD, then
        // zero words, then find each mark in a word by its lowest set bit.
        for (c, chunk) in bytes.chunks_mut(128).enumerate() {
            if snapshot::is_zero(chunk) {
                continue;
            }
            for (w, word) in chunk.chunks_mut(8).enumerate() {
                // Byte `k` of the word is bits `8k..8k + 8`.
                let mut bits = match <[u8; 8]>::try_from(&*word) {
                    Ok(w) => u64::from_le_bytes(w),
                    Err(_) => word.iter().rev().fold(0, |v, &b| v << 8 | u64::from(b)),
                };
                if bits == 0 {
                    continue;
                }
                while bits != 0 {
                    let k = bits.trailing_zeros() as usize / 8;
                    out.push((c * 128 + w * 8 + k) as u32);
                    bits &= !(0xff << (k * 8));
                }
                word.fill(0);
            }
        }
    }

    /// Marks the map's own pages in `mask` (pages known to be zero): its
    /// marks are bookkeeping, not the guest's state, so the state hash
    /// leaves them out.
    pub(super) fn mask_map(&self, mask: &mut [bool]) {
        let Some(map) = self.map else {
            return;
        };
        let first = map.base as usize / PAGE;
        let end = (map.base as usize + map.len as usize).div_ceil(PAGE);
        for m in mask.iter_mut().take(end).skip(first) {
            *m = true;
        }
    }

    /// A snapshot's pages through the map: the reference's, with the pages
    /// holding marked blocks read again. `None` when the map cannot answer.
    pub(super) fn capture_dirty(&mut self, memory_bytes: usize) -> Option<Arc<PageTable>> {
        if !self.tracks() {
            return None;
        }
        self.take_dirty();
        let n = memory_bytes / PAGE;
        if self.dirty.is_empty() && self.reference.len() == n {
            return Some(self.reference.clone());
        }
        // Shares every chunk of the reference but those the marks are in.
        let mut pages: PageTable = (*self.reference).clone();
        pages.resize(n);
        let data = self.ex.memory.data(&self.store);
        let mut last = None;
        for &b in &self.dirty {
            let i = b as usize / BLOCKS_PER_PAGE;
            if i >= n {
                // Above the guest's size: kept for the next restore to zero.
                self.carry.push(b);
                continue;
            }
            // The marks come in order: a page's blocks one after another.
            if last == Some(i) {
                continue;
            }
            last = Some(i);
            let chunk = &data[i * PAGE..(i + 1) * PAGE];
            pages.set(i, snapshot::capture_page(chunk, self.reference.get(i)));
        }
        let pages = Arc::new(pages);
        self.reference = pages.clone();
        Some(pages)
    }

    /// Restores `pages` through the map: writes the marked blocks and the
    /// pages where `pages` and the reference differ. `false` (nothing done) when
    /// the map cannot answer.
    pub(super) fn restore_dirty(&mut self, pages: &Arc<PageTable>) -> bool {
        if !self.tracks() {
            return false;
        }
        self.take_dirty();
        let mut written = 0;
        let reference = std::mem::replace(&mut self.reference, pages.clone());
        let data = self.ex.memory.data_mut(&mut self.store);
        let real = data.len() / PAGE;
        if !Arc::ptr_eq(&reference, pages) {
            let n = reference.len().max(pages.len()).min(real);
            let digests = &mut self.digests;
            reference.differing(pages, n, |i| {
                snapshot::restore_page(data, i, pages.get(i));
                written += 1;
                if let Some(d) = digests.get_mut(i) {
                    *d = PageDigest::Stale;
                }
            });
        }
        let mut last = None;
        for &b in &self.dirty {
            let i = b as usize / BLOCKS_PER_PAGE;
            if i < real {
                // Marked: written since, so resident; no need to look.
                snapshot::rewrite_block(data, b as usize, pages.get(i));
                if last != Some(i) {
                    last = Some(i);
                    written += 1;
                }
                // Stale again: a block carried over may have been hashed
                // since it was drained from the map.
                if let Some(d) = self.digests.get_mut(i) {
                    *d = PageDigest::Stale;
                }
            }
        }
        self.restored_pages = Some(written);
        true
    }

    /// Before a full scan (snapshot or restore): consumes the map's marks,
    /// so that the scan finds the map zero, as every snapshot has it.
    pub(super) fn begin_full_sync(&mut self) {
        self.restored_pages = None;
        self.stale_all_digests();
        self.take_dirty();
    }

    /// After a full scan made memory up to `scanned` bytes equal `pages`:
    /// `pages` becomes the reference. A marked block above `scanned` is
    /// zeroed after a restore (the guest's later growth must find it as
    /// fresh memory is) and carried over after a snapshot (which leaves
    /// memory as it is).
    pub(super) fn end_full_sync(&mut self, pages: &Arc<PageTable>, scanned: usize, restored: bool) {
        if self.map.is_none() {
            return;
        }
        let dirty = std::mem::take(&mut self.dirty);
        let data = self.ex.memory.data_mut(&mut self.store);
        let real = data.len() / BLOCK;
        for &b in &dirty {
            if b as usize >= scanned / BLOCK && (b as usize) < real {
                if restored {
                    snapshot::rewrite_block(data, b as usize, None);
                } else {
                    self.carry.push(b);
                }
            }
        }
        self.dirty = dirty;
        self.reference = pages.clone();
        self.synced = true;
    }
}

impl WasmProgram {
    /// How many pages the last restore wrote through the dirty-page map,
    /// `None` when it scanned every page. For tests and benchmarks.
    #[doc(hidden)]
    pub fn restored_pages(&self) -> Option<usize> {
        self.restored_pages
    }

    /// The guest's memory (up to its own size) and mutable globals, to
    /// compare two states byte for byte. For tests.
    #[doc(hidden)]
    pub fn memory_image(&mut self) -> (Vec<u8>, Vec<u128>) {
        let len = self.mem_len();
        let mem = self.ex.memory.data(&self.store)[..len].to_vec();
        let globals = self
            .ex
            .globals
            .iter()
            .map(|(g, _)| snapshot::val_bits(&g.get(&mut self.store)))
            .collect();
        (mem, globals)
    }
}
