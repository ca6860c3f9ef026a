//! The detector's shadow memory: for each 8-byte granule of linear
//! memory, the last accesses that a later access could still race with,
//! byte-precise (each record carries the mask of the granule's bytes it
//! touched), in copy-on-write pages so that a snapshot of the detector is
//! a short vector of shared pointers.
//!
//! Two levels: a page is 64 granules (512 bytes of memory, 3 KiB of
//! records), a directory 64 pages (32 KiB of memory). Why small: an
//! execution restored from a snapshot copies each page it writes once, and
//! with 4 KiB pages (24 KiB of records) those copies were the largest cost
//! of detection (13% of `readers_3`'s run under `perf`); why two levels:
//! a snapshot copies the top vector, one pointer per 32 KiB of memory.

use std::sync::Arc;

/// Records a granule keeps: two threads' writes to its two halves and a
/// read, say. When a fourth access must be kept, the oldest record of the
/// accessing thread goes first (program order orders it before every
/// access of that thread still to come), else the oldest read.
pub const RECORDS: usize = 3;

/// Granules of a page, and pages of a directory.
const GRANULES: usize = 64;
const PAGES: usize = 64;

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
    /// No record.
    pub const NONE: Rec = Rec {
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

#[derive(Clone, PartialEq, Eq, Debug)]
struct Dir {
    pages: [Option<Arc<Page>>; PAGES],
}

impl Default for Dir {
    fn default() -> Self {
        Dir {
            pages: std::array::from_fn(|_| None),
        }
    }
}

/// The shadow memory (see the module documentation).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shadow {
    dirs: Vec<Option<Arc<Dir>>>,
}

// By hand for `clone_from`, which keeps the directory vector's buffer.
impl Clone for Shadow {
    fn clone(&self) -> Self {
        Shadow {
            dirs: self.dirs.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.dirs.clone_from(&source.dirs);
    }
}

impl Shadow {
    /// Granule `g`'s records (granule `g` is bytes `8g..8g+8`).
    #[inline]
    pub fn cell(&self, g: u32) -> &Cell {
        let g = g as usize;
        let page = match self.dirs.get(g / (GRANULES * PAGES)) {
            Some(Some(dir)) => &dir.pages[g / GRANULES % PAGES],
            _ => return &EMPTY_CELL,
        };
        match page {
            Some(p) => &p.cells[g % GRANULES],
            None => &EMPTY_CELL,
        }
    }

    /// Replaces granule `g`'s records.
    pub fn set(&mut self, g: u32, new: Cell) {
        let i = g as usize;
        let d = i / (GRANULES * PAGES);
        if self.dirs.len() <= d {
            self.dirs.resize(d + 1, None);
        }
        let dir = Arc::make_mut(self.dirs[d].get_or_insert_with(Default::default));
        let page = dir.pages[i / GRANULES % PAGES].get_or_insert_with(|| {
            Arc::new(Page {
                cells: [EMPTY_CELL; GRANULES],
            })
        });
        Arc::make_mut(page).cells[i % GRANULES] = new;
    }

    /// Forgets every record of the bytes `[from, from + len)` (rounded out
    /// to whole granules): memory that starts a new life (a block the
    /// allocator hands out, a reused thread slot's stack) has no past
    /// accesses. A page or directory the range covers whole is dropped
    /// rather than emptied cell by cell: a thread's stack or a large block
    /// is thousands of granules, and a forget per allocation was a tenth of
    /// a std guest's exploration.
    pub fn forget(&mut self, from: u32, len: u32) {
        const DIR: u64 = (GRANULES * PAGES) as u64;
        const PAGE: u64 = GRANULES as u64;
        let last = (u64::from(from) + u64::from(len))
            .div_ceil(8)
            .min(self.dirs.len() as u64 * DIR);
        let mut g = u64::from(from / 8);
        while g < last {
            let d = (g / DIR) as usize;
            let dir_end = (g / DIR + 1) * DIR;
            let Some(dir) = &mut self.dirs[d] else {
                g = dir_end;
                continue;
            };
            if g % DIR == 0 && last >= dir_end {
                self.dirs[d] = None;
                g = dir_end;
                continue;
            }
            let p = (g / PAGE % PAGES as u64) as usize;
            let page_end = (g / PAGE + 1) * PAGE;
            let end = last.min(page_end);
            let Some(page) = &dir.pages[p] else {
                g = page_end;
                continue;
            };
            let (lo, hi) = ((g % PAGE) as usize, ((end - 1) % PAGE) as usize + 1);
            if lo == 0 && hi == GRANULES {
                Arc::make_mut(dir).pages[p] = None;
            } else if page.cells[lo..hi]
                .iter()
                .any(|c| !c.iter().all(Rec::is_empty))
            {
                let page = Arc::make_mut(dir).pages[p].as_mut().expect("present");
                Arc::make_mut(page).cells[lo..hi].fill(EMPTY_CELL);
            }
            g = end;
        }
    }

    /// Heap bytes held (a page shared with a snapshot counts in both).
    pub fn heap_bytes(&self) -> usize {
        let dirs = self.dirs.iter().flatten();
        let pages: usize = dirs.clone().map(|d| d.pages.iter().flatten().count()).sum();
        self.dirs.capacity() * 8
            + dirs.count() * std::mem::size_of::<Dir>()
            + pages * std::mem::size_of::<Page>()
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
    fn forgetting_empties_a_cell_and_keeps_the_others() {
        let mut a = Shadow::default();
        a.set(3, [rec(0), Rec::NONE, Rec::NONE]);
        a.set(9000, [rec(1), Rec::NONE, Rec::NONE]);
        a.forget(0, 64);
        assert!(a.cell(3)[0].is_empty());
        assert_eq!(a.cell(9000)[0], rec(1));
    }

    #[test]
    fn forgetting_crosses_pages_and_directories_and_stops_at_its_end() {
        let mut a = Shadow::default();
        let one = [rec(0), Rec::NONE, Rec::NONE];
        for g in [62, 63, 64, 4095, 4096, 4097, 9000] {
            a.set(g, one);
        }
        // Bytes 63*8+4 .. 4097*8: granules 63 to 4096, rounded out.
        a.forget(63 * 8 + 4, (4097 - 63) * 8 - 4);
        let kept: Vec<u32> = [62, 63, 64, 4095, 4096, 4097, 9000]
            .into_iter()
            .filter(|g| !a.cell(*g)[0].is_empty())
            .collect();
        assert_eq!(kept, [62, 4097, 9000]);
        // Past the last directory: nothing to do, nothing grown.
        let dirs = a.dirs.len();
        a.forget(u32::MAX - 16, 16);
        assert_eq!(a.dirs.len(), dirs);
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
