//! What a `World` holds on the heap, estimated: saved snapshots each hold
//! a clone, so their memory budget counts it (`Program::snapshot_bytes`).

use super::{Message, ObjEntry, Thread, World};
use std::sync::Arc;
use wasmrace_trace::Tid;

impl World {
    /// Heap bytes this world holds, approximately (B-tree nodes are
    /// estimated at one and a half times their entries). Saved snapshots
    /// each hold a clone, so their memory budget counts this
    /// (`Program::snapshot_bytes`).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let message = |m: &Message| size_of::<Message>() + m.data.len();
        let threads: usize = self
            .threads
            .iter()
            .map(|t| {
                t.pending.heap_bytes()
                    + t.mailbox.capacity() * size_of::<Message>()
                    + t.mailbox.iter().map(|m| m.data.len()).sum::<usize>()
                    + t.taken.as_ref().map_or(0, message)
                    + t.name.as_ref().map_or(0, |n| n.len())
                    + t.panic
                        .as_ref()
                        .map_or(0, |(a, b)| a.capacity() + b.capacity())
                    + t.stderr.capacity()
            })
            .sum::<usize>()
            + self.threads.capacity() * size_of::<Thread>();
        let objects: usize =
            btree_bytes(self.objects.len(), size_of::<u64>() + size_of::<ObjEntry>())
                + self
                    .objects
                    .values()
                    .map(|e| e.obj.heap_bytes())
                    .sum::<usize>();
        let names = btree_bytes(self.names.len(), size_of::<Arc<[u8]>>() + size_of::<Tid>())
            + self.names.keys().map(|n| n.len()).sum::<usize>();
        let futex = btree_bytes(self.futex.len(), 48)
            + self.futex.values().map(|q| q.capacity() * 8).sum::<usize>();
        threads
            + objects
            + names
            + futex
            + btree_bytes(self.index.len(), size_of::<Tid>() + size_of::<usize>())
            + (self.unstarted.capacity() * size_of::<usize>())
            + (self.slot_bases.capacity() + self.free_slots.capacity() + self.slot_lows.capacity())
                * size_of::<u32>()
            + self.races.as_ref().map_or(0, |d| d.heap_bytes())
    }
}

/// Bytes of a B-tree of `entries` entries of `entry` bytes, estimated.
pub(super) fn btree_bytes(entries: usize, entry: usize) -> usize {
    entries * entry * 3 / 2
}
