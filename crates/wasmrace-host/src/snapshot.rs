//! Exact snapshots of a guest between steps: linear memory in 4 KiB pages
//! (zero pages not stored, unchanged pages shared with the previous
//! snapshot, the page table itself shared in chunks), the mutable globals
//! and the host world. Also the state hash: blake3 over non-zero pages,
//! globals and the world.

use crate::world::World;
use std::sync::Arc;
use wasmrace_explore::{Status, ThreadView};
use wasmrace_trace::{OpKind, Tid};
use wasmtime::{Val, ValType};

pub const PAGE: usize = 4096;

pub type Page = [u8; PAGE];

/// The dirty-page map's unit: a byte of the map per 1 KiB block of memory
/// (`load::DIRTY_SHIFT`). Finer than a snapshot's page, so that a restore
/// writes back the kilobytes an execution wrote, not their whole pages:
/// a thread's stack frames, its Asyncify buffer and a few small
/// allocations each touch a sliver of a page.
pub const BLOCK: usize = 1 << crate::load::DIRTY_SHIFT;
/// Blocks in a page.
pub const BLOCKS_PER_PAGE: usize = PAGE / BLOCK;

/// Pages per chunk of a [`PageTable`].
const CHUNK: usize = 64;

type Chunk = [Option<Arc<Page>>; CHUNK];

/// The pages of a memory image (`None` for a zero page), held in chunks of
/// [`CHUNK`] pages that copies share: a snapshot that changed a few pages
/// copies a pointer per chunk and the chunks holding them, not a pointer
/// per page of memory (16,384 of them for 64 MiB), and a restore compares
/// two tables a chunk at a time where they share it. Entries at or above
/// `len` are always `None`, so that a shared chunk means equal pages.
#[derive(Clone, Default)]
pub struct PageTable {
    chunks: Vec<Option<Arc<Chunk>>>,
    len: usize,
}

impl PageTable {
    /// Pages in the image.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Page `i`; `None` when zero or at or above `len`.
    pub fn get(&self, i: usize) -> Option<&Arc<Page>> {
        if i >= self.len {
            return None;
        }
        self.chunks.get(i / CHUNK)?.as_ref()?[i % CHUNK].as_ref()
    }

    /// Sets page `i` (below `len`), copying its chunk if it is shared.
    pub fn set(&mut self, i: usize, page: Option<Arc<Page>>) {
        debug_assert!(i < self.len);
        let slot = &mut self.chunks[i / CHUNK];
        let chunk = match slot {
            Some(c) => c,
            None if page.is_none() => return,
            None => slot.insert(Arc::new(std::array::from_fn(|_| None))),
        };
        Arc::make_mut(chunk)[i % CHUNK] = page;
    }

    /// Makes the image `n` pages long: new pages are zero, pages at or
    /// above `n` are dropped.
    pub fn resize(&mut self, n: usize) {
        for i in n..self.len.min(n.next_multiple_of(CHUNK)) {
            self.set(i, None);
        }
        self.chunks.resize(n.div_ceil(CHUNK), None);
        self.len = n;
    }

    /// Calls `f` with each page index below `n` where `self` and `other`
    /// hold different pages (by pointer), skipping the chunks they share.
    pub fn differing(&self, other: &PageTable, n: usize, mut f: impl FnMut(usize)) {
        for c in 0..n.div_ceil(CHUNK) {
            let a = self.chunks.get(c).and_then(Option::as_ref);
            let b = other.chunks.get(c).and_then(Option::as_ref);
            match (a, b) {
                (Some(x), Some(y)) if Arc::ptr_eq(x, y) => continue,
                (None, None) => continue,
                _ => {}
            }
            // Slot by slot within the chunk (entries at or above `len` are
            // `None`, so no bound is checked): a restore compares a few
            // chunks this way every time, so the loop stays tight.
            let page = |chunk: Option<&Arc<Chunk>>, j: usize| {
                chunk.and_then(|ch| ch[j].as_ref()).map(Arc::as_ptr)
            };
            for j in 0..CHUNK.min(n - c * CHUNK) {
                if page(a, j) != page(b, j) {
                    f(c * CHUNK + j);
                }
            }
        }
    }

    /// Non-zero pages held.
    pub fn stored(&self) -> usize {
        self.chunks
            .iter()
            .flatten()
            .map(|c| c.iter().filter(|p| p.is_some()).count())
            .sum()
    }

    /// Bytes of the table itself (chunks shared with other tables counted
    /// in full, to stay on the safe side), page data not included.
    pub fn table_bytes(&self) -> usize {
        let held = self.chunks.iter().flatten().count();
        self.chunks.capacity() * std::mem::size_of::<Option<Arc<Chunk>>>()
            + held * std::mem::size_of::<Chunk>()
    }
}
/// The whole state of a program between two steps.
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) memory_bytes: usize,
    /// Shared as a whole, so that a restore can tell by one pointer that
    /// it restores the page list memory was last synchronised with.
    pub(crate) pages: Arc<PageTable>,
    pub(crate) globals: Vec<u128>,
    pub(crate) world: World,
    pub(crate) views: Vec<ThreadView>,
    pub(crate) status: Status,
    pub(crate) steps: u64,
    pub(crate) last: Option<(Tid, Option<OpKind>)>,
}

impl Snapshot {
    /// Bytes of page data this snapshot holds (shared pages counted).
    pub fn stored_bytes(&self) -> usize {
        self.pages.stored() * PAGE
    }
    /// The guest's linear memory size when the snapshot was taken, in
    /// bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("memory_bytes", &self.memory_bytes)
            .field("stored_bytes", &self.stored_bytes())
            .field("steps", &self.steps)
            .finish()
    }
}

/// Whether a page is all zeros. Most of a guest's memory is zero (Rust's
/// 1 MiB stack region, fresh thread slots), so this scan bounds snapshot,
/// restore and hash times: it ORs 256-byte blocks of `u64`s, which the
/// compiler vectorizes, and stops at the first non-zero block.
pub fn is_zero(page: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of the x86_64 baseline: 128 bytes per iteration in
        // eight 16-byte loads, which the portable loop below does not reach.
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_setzero_si128,
        };
        let mut chunks = page.chunks_exact(128);
        for c in &mut chunks {
            // SAFETY: `c` is 128 readable bytes; unaligned loads are allowed.
            let nonzero = unsafe {
                let p = c.as_ptr() as *const __m128i;
                let a = _mm_or_si128(_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
                let b = _mm_or_si128(_mm_loadu_si128(p.add(2)), _mm_loadu_si128(p.add(3)));
                let d = _mm_or_si128(_mm_loadu_si128(p.add(4)), _mm_loadu_si128(p.add(5)));
                let e = _mm_or_si128(_mm_loadu_si128(p.add(6)), _mm_loadu_si128(p.add(7)));
                let acc = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(d, e));
                _mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xffff
            };
            if nonzero {
                return false;
            }
        }
        chunks.remainder().iter().all(|&b| b == 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        page.chunks(256)
            .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
    }
}

/// Pages of `mem`, `None` for zero ones; `known_zero[i]` marks pages known
/// to be zero without reading them.
pub fn capture_pages(mem: &[u8], prev: &PageTable, known_zero: &[bool]) -> PageTable {
    let mut pages = PageTable::default();
    pages.resize(mem.len() / PAGE);
    for (i, chunk) in mem.chunks_exact(PAGE).enumerate() {
        if !known_zero.get(i).copied().unwrap_or(false) {
            pages.set(i, capture_page(chunk, prev.get(i)));
        }
    }
    pages
}

/// One page of memory: `None` when zero, `prev` when unchanged, else a
/// copy.
pub fn capture_page(chunk: &[u8], prev: Option<&Arc<Page>>) -> Option<Arc<Page>> {
    if is_zero(chunk) {
        return None;
    }
    if let Some(p) = prev {
        if p[..] == *chunk {
            return Some(p.clone());
        }
    }
    let mut page = [0u8; PAGE];
    page.copy_from_slice(chunk);
    Some(Arc::new(page))
}

/// Writes page `i` of `mem`: `page`, or zeros for `None`.
pub fn restore_page(mem: &mut [u8], i: usize, page: Option<&Arc<Page>>) {
    let chunk = &mut mem[i * PAGE..(i + 1) * PAGE];
    match page {
        Some(p) => chunk.copy_from_slice(&p[..]),
        // Only write zeros over non-zero pages: writing an untouched
        // copy-on-write page would fault it in for nothing. A copy from a
        // zero page: `fill(0)` here compiled to a byte loop.
        None => {
            if !is_zero(chunk) {
                chunk.copy_from_slice(&ZERO_PAGE);
            }
        }
    }
}

/// Writes block `b` of `mem` (`BLOCK` bytes) as its part of `page`, the
/// page holding it (zeros for `None`), without looking at it first: for a
/// block the guest wrote since the last restore, which is resident
/// anyway, so that checking it for zeros (as `restore_page` does) would
/// read it to save nothing.
pub fn rewrite_block(mem: &mut [u8], b: usize, page: Option<&Arc<Page>>) {
    let at = (b % BLOCKS_PER_PAGE) * BLOCK;
    let from = page.map_or(&ZERO_PAGE[..BLOCK], |p| &p[at..at + BLOCK]);
    mem[b * BLOCK..(b + 1) * BLOCK].copy_from_slice(from);
}

static ZERO_PAGE: Page = [0; PAGE];

/// Writes `pages` over `mem`; `skip[i]` marks pages zero both in `mem` and
/// in `pages`, left alone.
pub fn restore_pages(mem: &mut [u8], pages: &PageTable, skip: &[bool]) {
    for (i, chunk) in mem.chunks_exact_mut(PAGE).enumerate() {
        if skip.get(i).copied().unwrap_or(false) {
            continue;
        }
        match pages.get(i) {
            Some(p) => chunk.copy_from_slice(&p[..]),
            // Only write zeros over non-zero pages: writing an untouched
            // copy-on-write page would fault it in for nothing.
            _ => {
                if !is_zero(chunk) {
                    chunk.fill(0);
                }
            }
        }
    }
}

/// Hashes memory page by page: each non-zero page is hashed alone (one
/// 4 KiB input lets blake3 compress its four chunks in parallel with SIMD;
/// interleaving small updates between pages would break that), and its
/// index and digest go into `h`.
pub fn hash_memory(mem: &[u8], known_zero: &[bool], h: &mut blake3::Hasher) {
    h.update(&(mem.len() as u64).to_le_bytes());
    for (i, chunk) in mem.chunks_exact(PAGE).enumerate() {
        if !known_zero.get(i).copied().unwrap_or(false) && !is_zero(chunk) {
            h.update(&(i as u32).to_le_bytes());
            h.update(blake3::hash(chunk).as_bytes());
        }
    }
}

pub fn val_bits(v: &Val) -> u128 {
    match v {
        Val::I32(x) => *x as u32 as u128,
        Val::I64(x) => *x as u64 as u128,
        Val::F32(x) => *x as u128,
        Val::F64(x) => *x as u128,
        Val::V128(x) => x.as_u128(),
        _ => 0,
    }
}

pub fn val_from_bits(ty: &wasmtime::GlobalType, bits: u128) -> Val {
    match ty.content() {
        ValType::I32 => Val::I32(bits as u32 as i32),
        ValType::I64 => Val::I64(bits as u64 as i64),
        ValType::F32 => Val::F32(bits as u32),
        ValType::F64 => Val::F64(bits as u64),
        ValType::V128 => Val::V128(bits.into()),
        ValType::Ref(_) => Val::null_any_ref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_restore_round_trip_and_sharing() {
        let mut mem = vec![0u8; PAGE * 4];
        mem[5] = 1;
        mem[PAGE * 2 + 100] = 7;
        let a = capture_pages(&mem, &PageTable::default(), &[]);
        assert!(a.get(0).is_some() && a.get(1).is_none() && a.get(2).is_some());
        assert!(a.get(3).is_none() && a.len() == 4);
        mem[5] = 2;
        let b = capture_pages(&mem, &a, &[]);
        assert!(!Arc::ptr_eq(a.get(0).unwrap(), b.get(0).unwrap()));
        assert!(
            Arc::ptr_eq(a.get(2).unwrap(), b.get(2).unwrap()),
            "unchanged page is shared"
        );
        mem[PAGE * 3] = 9;
        restore_pages(&mut mem, &a, &[]);
        assert_eq!(mem[5], 1);
        assert_eq!(mem[PAGE * 3], 0);
        let (mut h1, mut h2) = (blake3::Hasher::new(), blake3::Hasher::new());
        hash_memory(&mem, &[], &mut h1);
        mem[PAGE * 3 + 1] = 1;
        hash_memory(&mem, &[], &mut h2);
        assert_ne!(h1.finalize(), h2.finalize());
    }

    /// A copy shares the chunks it does not change; `differing` finds
    /// exactly the pages that differ, across chunks and lengths; a shrink
    /// drops what it cuts, so a later growth finds zero pages there.
    #[test]
    fn page_tables_share_chunks_and_find_their_differences() {
        let page = |b: u8| Some(Arc::new([b; PAGE]));
        let mut a = PageTable::default();
        a.resize(200);
        for i in [0, 5, 63, 64, 130, 199] {
            a.set(i, page(i as u8 + 1));
        }
        let mut b = a.clone();
        b.set(64, page(9));
        b.set(70, page(7));
        b.set(5, None);
        let shared =
            |c: usize| Arc::ptr_eq(a.chunks[c].as_ref().unwrap(), b.chunks[c].as_ref().unwrap());
        assert_eq!(
            (shared(0), shared(1), shared(2), shared(3)),
            (false, false, true, true)
        );
        assert_eq!(a.get(64).unwrap()[0], 65, "the copy's change stays its own");
        let mut found = Vec::new();
        a.differing(&b, 200, |i| found.push(i));
        assert_eq!(found, [5, 64, 70]);
        b.resize(130);
        assert_eq!(
            (b.len(), b.get(130).is_none(), b.get(199).is_none()),
            (130, true, true)
        );
        b.resize(200);
        assert!(
            b.get(130).is_none() && b.get(199).is_none(),
            "cut pages come back zero"
        );
        found.clear();
        a.differing(&b, 200, |i| found.push(i));
        assert_eq!(found, [5, 64, 70, 130, 199]);
        assert_eq!((a.stored(), b.stored()), (6, 4));
    }

    #[test]
    fn zero_check_sees_the_last_byte() {
        let mut p = [0u8; PAGE];
        assert!(is_zero(&p));
        p[PAGE - 1] = 1;
        assert!(!is_zero(&p));
    }
}
