//! Data races on plain memory: a happens-before detector over threads,
//! synchronising objects and the bytes of linear memory (FastTrack,
//! Flanagan and Freund, PLDI 2009, byte-precise within 8-byte granules).
//!
//! The host feeds it, per execution: every step's synchronisation (the
//! step's object accesses: a read acquires the object's clock, any other
//! access acquires and releases it; wasm atomics are sequentially
//! consistent, so an atomic store or read-modify-write orders later
//! operations on its address), every spawn (the child starts with its
//! parent's clock), every block the allocator hands out (its past is
//! forgotten: its new owner does not race with its last), and every plain load
//! and store of the guest between steps, with its address, length and
//! site. Two accesses race when they touch a common byte, one writes, they
//! come from different threads and neither happens before the other.
//!
//! What keeps it cheap (FastTrack's observations): an access in the same
//! epoch as a covering access of the same thread and at least the same
//! kind needs no check and changes nothing; an access that happens after
//! an earlier record of the bytes it covers (and is at least as strong)
//! replaces it, since any later access racing the old one races the new
//! one too. A thread's epoch (its own clock entry) moves on only when it
//! releases something.
//!
//! The detector is part of the program state that snapshots copy (its
//! shadow pages are shared until written), so a restored state reports the
//! same races as a replayed one; state hashes leave it out (see
//! [`Detector`]).

mod clock;
mod shadow;

pub use clock::VClock;
use shadow::{Cell, Rec, Shadow};
use std::collections::BTreeMap;
use wasmrace_trace::{Access, AccessKind, Oid};

/// One of the two accesses of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaceAccess {
    /// The accessing thread (its index in the execution, spawn order).
    pub thread: usize,
    /// Whether it wrote.
    pub write: bool,
    /// The first byte it touched (of the earlier access: within the
    /// granule the two share).
    pub addr: u32,
    /// How many bytes from `addr` on.
    pub len: u32,
    /// Its site (an instruction's offset in the module's code section).
    pub site: u32,
    /// The step of the execution it came after (1 is the first).
    pub step: u32,
}

/// Two accesses to a common byte, one a write, by different threads, with
/// no happens-before between them: `earlier` was recorded first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Race {
    /// The access recorded first.
    pub earlier: RaceAccess,
    /// The access that found the race.
    pub later: RaceAccess,
}

/// The most threads whose accesses are checked: thread indices are kept
/// in 16 bits; accesses of later threads are not checked.
pub const MAX_THREADS: usize = Rec::EMPTY as usize;

/// The detector (see the module documentation). One per execution; the
/// main thread is thread 0.
///
/// Its `Hash` (what state caches compare) is empty: a state is its memory,
/// globals and objects, whatever the detector remembers of how they came
/// to be. Clocks only grow and access records carry their history, so
/// hashing them made no two states of a waiting loop equal (SES ran a
/// correct spin to the step limit) and changed every state count a state
/// cache reports. The price: a state-caching strategy (`dfs
/// --state-cache`, `ses`) prunes a state equal to a visited one even when
/// the accesses that led there differ, and a race between an access before
/// that state and one after it is then looked for only along the visited
/// path (docs/data-races.md, "What a pass covers"). Snapshots copy the
/// detector whole, and equality (`Eq`) is exact.
#[derive(Debug, PartialEq, Eq)]
pub struct Detector {
    clocks: Vec<VClock>,
    objects: BTreeMap<Oid, VClock>,
    shadow: Shadow,
    /// Steps executed so far.
    step: u32,
}

// By hand for `clone_from`, which a restore calls (`World::assign_from`):
// the clocks keep their buffers where the derived one allocated them anew.
impl Clone for Detector {
    fn clone(&self) -> Self {
        Detector {
            clocks: self.clocks.clone(),
            objects: self.objects.clone(),
            shadow: self.shadow.clone(),
            step: self.step,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.clocks.clone_from(&source.clocks);
        self.objects.clone_from(&source.objects);
        self.shadow.clone_from(&source.shadow);
        self.step = source.step;
    }
}

impl std::hash::Hash for Detector {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

impl Detector {
    /// The detector of an execution that has only its main thread.
    pub fn new() -> Self {
        let mut d = Detector {
            clocks: Vec::new(),
            objects: BTreeMap::new(),
            shadow: Shadow::default(),
            step: 0,
        };
        d.ensure(0);
        d
    }

    #[inline]
    fn ensure(&mut self, t: usize) {
        if self.clocks.len() <= t {
            self.clocks.resize(t + 1, VClock::default());
        }
        if self.clocks[t].get(t) == 0 {
            self.clocks[t].set(t, 1);
        }
    }

    /// Thread `t`'s epoch (its own clock entry), the thread made known
    /// first if it is new: one look at its clock on the path every access
    /// takes.
    #[inline(always)]
    fn epoch(&mut self, t: usize) -> u32 {
        match self.clocks.get(t).map(|c| c.get(t)) {
            Some(c) if c != 0 => c,
            _ => {
                self.ensure(t);
                self.clocks[t].get(t)
            }
        }
    }

    /// Thread `t` released something: its next accesses are a new epoch.
    fn bump(&mut self, t: usize) {
        let c = self.clocks[t].get(t);
        self.clocks[t].set(t, c.saturating_add(1));
    }

    /// Thread `parent` started thread `child` (a new index): the child
    /// starts with everything its parent has seen.
    pub fn fork(&mut self, parent: usize, child: usize) {
        self.ensure(parent);
        if self.clocks.len() <= child {
            self.clocks.resize(child + 1, VClock::default());
        }
        let mut c = self.clocks[parent].clone();
        c.set(child, 1);
        self.clocks[child] = c;
        self.bump(parent);
    }

    /// Thread `t` runs a step whose operation touched `accesses`: reads
    /// acquire each object's clock, every other access (a write, a lock's
    /// acquisition or release, a send, an exit) acquires and releases it.
    /// The end-of-process object every std step reads orders nothing.
    pub fn step(&mut self, t: usize, accesses: &[Access]) {
        self.step = self.step.saturating_add(1);
        self.ensure(t);
        let mut released = false;
        for a in accesses {
            if a.obj == Oid::process() {
                continue;
            }
            let o = self.objects.entry(a.obj).or_default();
            self.clocks[t].join(o);
            if !matches!(a.kind, AccessKind::Read | AccessKind::SharedSync) {
                o.join(&self.clocks[t]);
                released = true;
            }
        }
        if released {
            self.bump(t);
        }
    }

    /// Thread `t` made a synchronising load of `obj` (wasi-libc's accesses,
    /// `race_acquire`): it acquires the object's clock.
    pub fn acquire(&mut self, t: usize, obj: Oid) {
        self.ensure(t);
        if let Some(o) = self.objects.get(&obj) {
            self.clocks[t].join(o);
        }
    }

    /// Thread `t` made a synchronising store to `obj` (`race_release`): it
    /// acquires and releases the object's clock.
    pub fn release(&mut self, t: usize, obj: Oid) {
        self.ensure(t);
        let o = self.objects.entry(obj).or_default();
        self.clocks[t].join(o);
        o.join(&self.clocks[t]);
        self.bump(t);
    }

    /// Memory `[from, from + len)` starts a new life (a block the allocator
    /// hands out, a thread slot given to a new thread): its past accesses
    /// are forgotten, so that its new owner does not race with its last.
    pub fn forget(&mut self, from: u32, len: u32) {
        self.shadow.forget(from, len);
    }

    /// Thread `t` accessed `len` bytes at `addr` at `site`: the race it
    /// makes with an earlier access, if any (the access is then not
    /// recorded). Always inlined: it is the host's hook's whole work for
    /// most accesses, and a call of its own cost more than its covered
    /// check.
    #[inline(always)]
    pub fn access(
        &mut self,
        t: usize,
        addr: u32,
        len: u32,
        write: bool,
        site: u32,
    ) -> Result<(), Race> {
        if len == 0 || t >= MAX_THREADS {
            return Ok(());
        }
        let c = self.epoch(t);
        // Most accesses lie in one granule and many are covered already
        // (a value stored then loaded back in the same epoch): that check
        // inline, the rest out of line, so the common call stays short. An
        // uncovered access of one granule goes straight to its record,
        // without the covered check again.
        let lo = addr % 8;
        if len <= 8 - lo {
            let (g, mask) = (addr / 8, span(lo, lo + len));
            if self.covered_at(c, t, g, mask, write) {
                return Ok(());
            }
            return self
                .record(t, g, mask, write, site)
                .map_err(|r| self.race(r, g, t, addr, len, write, site));
        }
        self.access_slow(t, addr, len, write, site)
    }

    /// Whether granule `g`'s bytes `mask` are covered by a record of thread
    /// `t`'s current epoch at least as strong as this access (`write`):
    /// the access then needs no check and changes nothing.
    #[inline(always)]
    fn covered(&self, t: usize, g: u32, mask: u8, write: bool) -> bool {
        self.covered_at(self.clocks[t].get(t), t, g, mask, write)
    }

    /// [`Detector::covered`] with `t`'s epoch `c` known.
    #[inline(always)]
    fn covered_at(&self, c: u32, t: usize, g: u32, mask: u8, write: bool) -> bool {
        let tid = t as u16;
        self.shadow
            .cell(g)
            .iter()
            .any(|r| r.tid == tid && r.clock == c && (r.write || !write) && r.mask & mask == mask)
    }

    /// [`Detector::access`] granule by granule.
    #[inline(never)]
    fn access_slow(
        &mut self,
        t: usize,
        addr: u32,
        len: u32,
        write: bool,
        site: u32,
    ) -> Result<(), Race> {
        let end = u64::from(addr) + u64::from(len);
        let mut at = u64::from(addr);
        while at < end {
            let g = (at / 8) as u32;
            let lo = (at % 8) as u32;
            let hi = (end - u64::from(g) * 8).min(8) as u32;
            let mask = span(lo, hi);
            if !self.covered(t, g, mask, write) {
                if let Err(r) = self.record(t, g, mask, write, site) {
                    return Err(self.race(r, g, t, addr, len, write, site));
                }
            }
            at = u64::from(g) * 8 + 8;
        }
        Ok(())
    }

    /// The race of thread `t`'s access (`addr`, `len`, `write`, `site`)
    /// with record `r` of granule `g`.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn race(&self, r: Rec, g: u32, t: usize, addr: u32, len: u32, write: bool, site: u32) -> Race {
        let first = r.mask.trailing_zeros();
        let last = 7 - r.mask.leading_zeros();
        Race {
            earlier: RaceAccess {
                thread: r.tid as usize,
                write: r.write,
                addr: g * 8 + first,
                len: last - first + 1,
                site: r.site,
                step: r.step,
            },
            later: RaceAccess {
                thread: t,
                write,
                addr,
                len,
                site,
                step: self.step,
            },
        }
    }

    /// One granule of an access the covered check did not take (bytes
    /// `mask` of granule `g`): `Err` with the earlier record it races,
    /// else its record kept.
    #[inline(never)]
    fn record(&mut self, t: usize, g: u32, mask: u8, write: bool, site: u32) -> Result<(), Rec> {
        let me = &self.clocks[t];
        let tid = t as u16;
        let c = me.get(t);
        let cell = self.shadow.cell(g);
        let rec = Rec {
            tid,
            write,
            mask,
            clock: c,
            site,
            step: self.step,
        };
        // Memory no access touched yet (or since it was forgotten), half
        // the accesses of a program that allocates: the record alone,
        // which is what the general case below comes to.
        if cell.iter().all(Rec::is_empty) {
            let mut new = [Rec::NONE; shadow::RECORDS];
            new[0] = rec;
            self.shadow.set(g, new);
            return Ok(());
        }
        let cell = *cell;
        let before = |r: &Rec| r.tid == tid || r.clock <= me.get(r.tid as usize);
        if let Some(r) = cell
            .iter()
            .find(|r| !r.is_empty() && r.mask & mask != 0 && (write || r.write) && !before(r))
        {
            return Err(*r);
        }
        let mut new: Cell = cell;
        // Records this access subsumes go.
        for r in new.iter_mut() {
            if !r.is_empty() && before(r) && r.mask & !mask == 0 && (write || !r.write) {
                r.tid = Rec::EMPTY;
            }
        }
        if let Some(r) = new
            .iter_mut()
            .find(|r| r.tid == tid && r.clock == c && r.write == write)
        {
            r.mask |= mask;
            r.site = site;
            r.step = self.step;
        } else {
            let slot = new
                .iter()
                .position(Rec::is_empty)
                .or_else(|| new.iter().position(|r| r.tid == tid))
                .or_else(|| new.iter().position(before))
                .or_else(|| new.iter().position(|r| !r.write))
                .unwrap_or(0);
            new[slot] = rec;
        }
        // Normalise emptied records so that equal states compare equal.
        for r in new.iter_mut() {
            if r.is_empty() {
                *r = Rec::NONE;
            }
        }
        sort_records(&mut new);
        if new != cell {
            self.shadow.set(g, new);
        }
        Ok(())
    }

    /// Heap bytes held, approximately (snapshots count it).
    pub fn heap_bytes(&self) -> usize {
        let clocks: usize = self.clocks.iter().map(VClock::heap_bytes).sum();
        let objects: usize = self.objects.values().map(|c| c.heap_bytes() + 48).sum();
        clocks + objects + self.shadow.heap_bytes()
    }
}

/// The mask of a granule's bytes `lo..hi` (`lo < hi <= 8`).
#[inline]
fn span(lo: u32, hi: u32) -> u8 {
    ((1u32 << hi) - (1u32 << lo)) as u8
}

/// Sorts a cell's records by thread, kind and clock, keeping the order of
/// equal ones (as a stable sort does): an insertion sort of three, where
/// `sort_by_key`'s general code was a tenth of the detector's time.
fn sort_records(cell: &mut Cell) {
    let key = |r: &Rec| (u64::from(r.tid) << 33) | (u64::from(r.write) << 32) | u64::from(r.clock);
    for i in 1..cell.len() {
        let mut j = i;
        while j > 0 && key(&cell[j - 1]) > key(&cell[j]) {
            cell.swap(j - 1, j);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests;
