//! The state hash, incremental through the dirty-page map: each page's
//! digest is cached and recomputed only when the page may have changed
//! since (marked in the map, written by a restore, or anything unknown: a
//! full synchronisation, a fresh instance, an untracked module). The
//! digests combine exactly as a full hash does (`snapshot::hash_memory`),
//! so the hash stays a function of the state alone, whatever was cached.

use super::WasmProgram;
use crate::snapshot::{self, PAGE};

/// A page's cached contribution to the state hash.
#[derive(Clone, Copy, Debug, Default)]
pub(super) enum PageDigest {
    /// Unknown: the page may have changed since it was hashed.
    #[default]
    Stale,
    /// All zero: leaves no trace in the hash.
    Zero,
    /// The blake3 digest of the page's bytes.
    Digest([u8; 32]),
}

impl WasmProgram {
    /// Forgets every cached page digest.
    pub(super) fn stale_all_digests(&mut self) {
        self.digests.clear();
    }

    /// Forgets page `i`'s cached digest.
    pub(super) fn stale_digest(&mut self, i: usize) {
        if let Some(d) = self.digests.get_mut(i) {
            *d = PageDigest::Stale;
        }
    }

    /// The memory part of the state hash into `h`, the same bytes as
    /// `snapshot::hash_memory` over the guest's memory with the known-zero
    /// pages and the map's own pages left out, but reading only the pages
    /// whose digest is stale.
    pub(super) fn hash_memory_cached(&mut self, h: &mut blake3::Hasher) {
        let len = self.mem_len();
        let n = len / PAGE;
        self.settle_marks();
        if !self.tracks() {
            self.stale_all_digests();
        }
        let mut skip = self.known_zero(&self.store.data().world, n);
        self.mask_map(&mut skip);
        // Pages above the guest's size: hashed afresh if it grows again.
        self.digests.resize(n, PageDigest::Stale);
        let data = &self.ex.memory.data(&self.store)[..len];
        h.update(&(len as u64).to_le_bytes());
        for (i, d) in self.digests.iter_mut().enumerate() {
            if skip.get(i).copied().unwrap_or(false) {
                continue;
            }
            if let PageDigest::Stale = d {
                let chunk = &data[i * PAGE..(i + 1) * PAGE];
                *d = if snapshot::is_zero(chunk) {
                    PageDigest::Zero
                } else {
                    PageDigest::Digest(*blake3::hash(chunk).as_bytes())
                };
            }
            if let PageDigest::Digest(digest) = d {
                h.update(&(i as u32).to_le_bytes());
                h.update(digest);
            }
        }
    }

    /// The state hash computed from scratch, every page read: what the
    /// cached hash must equal. For tests.
    #[doc(hidden)]
    pub fn state_hash_uncached(&mut self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        let len = self.mem_len();
        self.settle_marks();
        let mut zero = self.known_zero(&self.store.data().world, len / PAGE);
        self.mask_map(&mut zero);
        snapshot::hash_memory(&self.ex.memory.data(&self.store)[..len], &zero, &mut h);
        self.hash_rest(&mut h);
        *h.finalize().as_bytes()
    }

    /// The state hash's part after memory: globals and host objects.
    pub(super) fn hash_rest(&mut self, h: &mut blake3::Hasher) {
        for (g, _) in &self.ex.globals {
            h.update(&snapshot::val_bits(&g.get(&mut self.store)).to_le_bytes());
        }
        self.store.data().world.hash_into(h);
    }
}
