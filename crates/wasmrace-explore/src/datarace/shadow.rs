//! The detector's shadow memory: for each 8-byte granule of linear
//! memory, the last accesses that a later access could still race with,
//! byte-precise (each record carries the mask of the granule's bytes it
//! touched), in copy-on-write pages so that a snapshot of the detector is
//! a vector of shared pointers, and with a running digest of every cell
//! so that hashing the detector costs nothing per granule.

use std::sync::Arc;
use wasmrace_trace::mix64;

/// Records a granule keeps: two threads' writes to its two halves and a
/// read, say. When a fourth access must be kept, the oldest record of the
/// accessing thread goes first (program order orders it before every
/// access of that thread still to come), else the oldest read.
pub const RECORDS: usize = 3;

/// Bytes of memory a shadow page covers (a wasm page has 16).
const PAGE_BYTES: u32 = 4096;
const GRANULES: usize = (PAGE_BYTES / 8) as usize;

/// One earlier access to a granule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rec {
    /// The accessing thread's index, [`Rec::EMPTY`] for no record.
    pub tid: u16,
    /// Whether it wrote.
    pub write: bool,
    /// The bytes of the granule it touched (bit `i`: byte `i`).
    pub mask: u8,
    /// The thread's own clock entry at the access.
    pub clock: u32,
    /// Where in the code it was (an instruction's offset in the code
    /// section, as the loader numbers sites).
    pub site: u32,
    /// The step of the execution the access came after.
    pub step: u32,
}

impl Rec {
    /// The thread index of an empty record.
    pub const EMPTY: u16 = u16::MAX;
    const NONE: Rec = Rec {
        tid: Rec::EMPTY,
        write: false,
        mask: 0,
        clock: 0,
        site: 0,
        step: 0,
    };

    /// Whether the slot holds no record.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.tid == Rec::EMPTY
    }
}

/// A granule's records.
pub type Cell = [Rec; RECORDS];

const EMPTY_CELL: Cell = [Rec::NONE; RECORDS];

#[derive(Clone, PartialEq, Eq, Debug)]
struct Page {
    cells: [Cell; GRANULES],
}

/// The shadow memory (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shadow {
    pages: Vec<Option<Arc<Page>>>,
    /// XOR over non-empty cells of a hash of the granule and its records'
    /// threads, kinds and bytes.
    digest: u64,
}

impl std::hash::Hash for Shadow {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.digest.hash(state);
    }
}

fn cell_hash(g: u32, cell: &Cell) -> u64 {
    if cell.iter().all(Rec::is_empty) {
        return 0;
    }
    // Who accessed which bytes how, not when (clock, step) or where
    // (site): see `Detector`'s `Hash`.
    let mut h = mix64(u64::from(g) | 1 << 40);
    for r in cell {
        let a = u64::from(r.tid) | u64::from(r.write) << 16 | u64::from(r.mask) << 24;
        h = mix64(h ^ a);
    }
    h
}

impl Shadow {
    /// Granule `g`'s records (granule `g` is bytes `8g..8g+8`).
    #[inline]
    pub fn cell(&self, g: u32) -> &Cell {
        let p = (g as usize) / GRANULES;
        match self.pages.get(p) {
            Some(Some(page)) => &page.cells[g as usize % GRANULES],
            _ => &EMPTY_CELL,
        }
    }

    /// Replaces granule `g`'s records.
    pub fn set(&mut self, g: u32, new: Cell) {
        let p = (g as usize) / GRANULES;
        if self.pages.len() <= p {
            self.pages.resize(p + 1, None);
        }
        let page = self.pages[p].get_or_insert_with(|| {
            Arc::new(Page {
                cells: [EMPTY_CELL; GRANULES],
            })
        });
        let cell = &mut Arc::make_mut(page).cells[g as usize % GRANULES];
        self.digest ^= cell_hash(g, cell) ^ cell_hash(g, &new);
        *cell = new;
    }

    /// Forgets every record of the bytes `[from, from + len)` (rounded out
    /// to whole granules): memory that starts a new life (a reused thread
    /// slot's stack) has no past accesses.
    pub fn forget(&mut self, from: u32, len: u32) {
        let first = from / 8;
        let last = (u64::from(from) + u64::from(len))
            .div_ceil(8)
            .min(u64::from(u32::MAX)) as u32;
        let mut g = first;
        while g < last {
            let p = g as usize / GRANULES;
            if p >= self.pages.len() {
                break;
            }
            let page_end = ((p + 1) * GRANULES) as u32;
            if self.pages[p].is_none() {
                g = page_end;
                continue;
            }
            let end = page_end.min(last);
            for k in g..end {
                if !self.cell(k).iter().all(Rec::is_empty) {
                    self.set(k, EMPTY_CELL);
                }
            }
            g = end;
        }
    }

    /// Heap bytes held (a page shared with a snapshot counts in both).
    pub fn heap_bytes(&self) -> usize {
        let page = std::mem::size_of::<Page>();
        self.pages.capacity() * 8 + self.pages.iter().flatten().count() * page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(tid: u16) -> Rec {
        Rec {
            tid,
            write: true,
            mask: 0xff,
            clock: 1,
            site: 7,
            step: 2,
        }
    }

    #[test]
    fn the_digest_depends_on_contents_only() {
        let mut a = Shadow::default();
        let mut b = Shadow::default();
        a.set(3, [rec(0), Rec::NONE, Rec::NONE]);
        a.set(9000, [rec(1), Rec::NONE, Rec::NONE]);
        b.set(9000, [rec(1), Rec::NONE, Rec::NONE]);
        assert_ne!(a.digest, b.digest);
        b.set(3, [rec(0), Rec::NONE, Rec::NONE]);
        assert_eq!(a.digest, b.digest);
        a.forget(0, 64);
        b.set(3, EMPTY_CELL);
        assert_eq!(a.digest, b.digest);
        assert!(a.cell(3)[0].is_empty());
        assert_eq!(a.cell(9000)[0], rec(1));
    }

    #[test]
    fn a_clone_shares_pages_until_written() {
        let mut a = Shadow::default();
        a.set(1, [rec(0), Rec::NONE, Rec::NONE]);
        let snapshot = a.clone();
        a.set(1, [rec(2), Rec::NONE, Rec::NONE]);
        assert_eq!(snapshot.cell(1)[0].tid, 0);
        assert_eq!(a.cell(1)[0].tid, 2);
    }
}
