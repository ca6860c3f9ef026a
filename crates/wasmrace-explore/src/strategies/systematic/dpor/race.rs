//! Events, the dependency relation and the races of one execution, for
//! DPOR (Abdulla, Aronis, Jonsson & Sagonas, JACM 2017, §3): happens-before
//! by vector clocks, `e ⋖ e'` (e happens before e' directly, with no event
//! between), and each race's reversal `notdep(e, E).e'`.
//!
//! **Dependency.** Two events are dependent when one thread runs both, one
//! spawned the other's thread, or they touch one object and not both
//! accesses are shared (`Access::conflicts`: reads and shared syncs
//! commute; `Sync` conflicts with everything on its object). Table keys,
//! mailboxes and thread liveness are objects of their own, so this covers
//! tables per key and message passing (every send to a mailbox and every
//! receive from it are ordered: coarser than Concuerror's relation, and the
//! same one the `Metrics` canonical hash counts traces by).
//!
//! **Blocking.** A blocked thread has no event, so some races cannot be
//! reversed as they stand:
//! - the race of an event with the one it made possible is *irreversible*
//!   (Concuerror's term): an exit and the join it releases, a send and the
//!   receive that takes its message, a notification and the wake-up it
//!   causes (for a std guest's `memory.atomic.notify`, the wake-up of a
//!   thread it found blocked in a wait without a timeout), the last
//!   arrival at a barrier and a departure. They order the events
//!   (happens-before) but are not reversed;
//! - a lock acquisition that follows a release by another thread races,
//!   as in Nidhugg, with the *acquisition* that release ended: reversed,
//!   the second acquirer takes the lock first.

use wasmrace_trace::{Access, Oid, OpKind, SyncRole, Tid};

/// One event: a thread's step with its alternative and what it touched
/// (per object, whether every access was shared), or, for a sleeping
/// thread, the step it is about to take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ev {
    pub tid: Tid,
    pub alt: u32,
    pub op: Option<OpKind>,
    /// Sorted by object, one entry per object: `true` when shared.
    pub accesses: Accesses,
    pub spawned: Vec<Tid>,
    pub message: Option<(Tid, u32)>,
    /// For a `memory.atomic.notify`, the threads blocked in the program
    /// right before it (empty for every other event, and when unknown).
    pub blocked: Vec<Tid>,
}

impl Ev {
    /// The event of `tid` taking `alt` with `accesses`.
    pub fn new(tid: Tid, alt: u32, op: Option<OpKind>, accesses: &[Access]) -> Ev {
        let mut merged = Accesses::default();
        for a in accesses {
            match merged.iter_mut().find(|(o, _)| *o == a.obj) {
                Some(m) => m.1 &= a.kind.is_shared(),
                None => merged.push((a.obj, a.kind.is_shared())),
            }
        }
        merged.sort_unstable_by_key(|&(o, _)| o);
        Ev {
            tid,
            alt,
            op,
            accesses: merged,
            spawned: Vec::new(),
            message: None,
            blocked: Vec::new(),
        }
    }

    fn role(&self) -> SyncRole {
        self.op.map_or(SyncRole::None, OpKind::role)
    }

    /// Whether `tid` was blocked in the program right before this event.
    fn found_blocked(&self, tid: Tid) -> bool {
        self.blocked.contains(&tid)
    }
}

/// Accesses kept inline up to this many: a step touches one or two
/// objects, rarely more.
const INLINE: usize = 3;

/// An event's accesses (object, shared), inline up to [`INLINE`] of them:
/// events are made at every step (observed, predicted, put to sleep), and
/// a `Vec` each cost an allocation per step.
#[derive(Clone)]
pub(crate) enum Accesses {
    /// The first `n` entries.
    Inline(u8, [(Oid, bool); INLINE]),
    /// More than [`INLINE`].
    Heap(Vec<(Oid, bool)>),
}

impl Default for Accesses {
    fn default() -> Self {
        Accesses::Inline(0, [(Oid(0), false); INLINE])
    }
}

impl Accesses {
    fn push(&mut self, a: (Oid, bool)) {
        match self {
            Accesses::Inline(n, items) if usize::from(*n) < INLINE => {
                items[usize::from(*n)] = a;
                *n += 1;
            }
            Accesses::Inline(n, items) => {
                let mut v = items[..usize::from(*n)].to_vec();
                v.push(a);
                *self = Accesses::Heap(v);
            }
            Accesses::Heap(v) => v.push(a),
        }
    }
}

impl std::ops::Deref for Accesses {
    type Target = [(Oid, bool)];
    fn deref(&self) -> &Self::Target {
        match self {
            Accesses::Inline(n, items) => &items[..usize::from(*n)],
            Accesses::Heap(v) => v,
        }
    }
}

impl std::ops::DerefMut for Accesses {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Accesses::Inline(n, items) => &mut items[..usize::from(*n)],
            Accesses::Heap(v) => v,
        }
    }
}

impl PartialEq for Accesses {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Accesses {}

impl std::fmt::Debug for Accesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Whether `a` and `b` are dependent (see the module documentation).
pub(crate) fn dependent(a: &Ev, b: &Ev) -> bool {
    if a.tid == b.tid || a.spawned.contains(&b.tid) || b.spawned.contains(&a.tid) {
        return true;
    }
    // Both lists are sorted by object: one merge pass.
    let (mut i, mut j) = (0, 0);
    while i < a.accesses.len() && j < b.accesses.len() {
        let ((oa, sa), (ob, sb)) = (a.accesses[i], b.accesses[j]);
        match oa.cmp(&ob) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if !(sa && sb) {
                    return true;
                }
                i += 1;
                j += 1;
            }
        }
    }
    false
}

/// A race to reverse: `e` at depth `at` (or the acquisition it races
/// through) and `e'` at `k`. Its reversal `v` (`notdep(e, E)` then `e'`,
/// [`Clocks::reversal`]) belongs to the wakeup tree or backtrack set at
/// `at`, the state right before `e`. The reversal is computed when it is
/// used rather than kept: a `Vec` per race was an allocation each.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Race {
    pub at: usize,
    pub k: usize,
}

/// Per object: the last exclusive access and the shared ones since (a
/// list threaded through [`Clocks::shared`], newest first).
#[derive(Clone, Copy, Debug, Default)]
struct ObjState {
    last_excl: Option<usize>,
    shared_head: Option<u32>,
}

/// What one event changed in an object's [`ObjState`] (by its dense
/// index), to undo it.
#[derive(Clone, Copy, Debug)]
enum ObjUndo {
    /// A shared access: pushed onto the object's list (and [`Clocks::shared`]).
    Shared(u32),
    /// An exclusive access: the state it replaced.
    Excl(u32, ObjState),
}

/// What one event changed, to undo it when the path backtracks above it:
/// its thread's previous last event, and how many records it pushed onto
/// [`Clocks::obj_undo`] and [`Clocks::spawn_undo`].
#[derive(Clone, Copy, Debug)]
struct Undo {
    last_of: Option<usize>,
    objects: u32,
    spawned: u32,
}

/// One event's place in the clocks: its thread's slot, its 1-based rank
/// in that thread, and where its vector clock starts in [`Clocks::clock`].
#[derive(Clone, Copy, Debug)]
struct Pos {
    slot: u32,
    rank: u32,
    clock: usize,
}

/// Happens-before of the current path, by vector clocks, kept per depth:
/// after backtracking, only the events from the first new one are
/// computed again (the state of every shorter prefix is restored by
/// undoing the events above it, newest first).
///
/// Every table is a flat `Vec` indexed by a dense id (a thread's slot, an
/// object's index) or used as a stack in path order, so that adding and
/// undoing an event allocates nothing once the buffers have grown: maps
/// and a `Vec` per clock, per object and per undo record cost an
/// allocation or more per event (issue #12's cost per step).
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    /// Each thread's slot, in order of first appearance. Never shrinks: a
    /// slot only names a clock entry, so a thread keeps it across
    /// executions and the relation does not depend on it.
    slots: Vec<Tid>,
    /// Per slot: its thread's last event.
    last_of: Vec<Option<usize>>,
    /// Per slot: the event that spawned its thread.
    spawned_by: Vec<Option<usize>>,
    /// Objects seen, sorted by id, with their dense index. Never shrinks.
    object_ids: Vec<(Oid, u32)>,
    /// Per object index: its state.
    objects: Vec<ObjState>,
    /// Shared accesses (event, the object's previous entry), one stack for
    /// all objects: pushed and popped in path order.
    shared: Vec<(usize, Option<u32>)>,
    /// Per event.
    pos: Vec<Pos>,
    /// Every event's vector clock, one after another: the events of each
    /// slot it happens after or is (slots added later are 0).
    clock: Vec<u32>,
    /// Per event.
    undo: Vec<Undo>,
    obj_undo: Vec<ObjUndo>,
    /// (slot of a spawned thread, its previous spawner).
    spawn_undo: Vec<(usize, Option<usize>)>,
    /// Scratch buffers of [`push`](Self::push), kept for their capacity.
    preds: Vec<usize>,
    candidates: Vec<(usize, Oid)>,
}

impl Clocks {
    /// The vector clock of event `e`.
    fn clock_of(&self, e: usize) -> &[u32] {
        let start = self.pos[e].clock;
        let end = self.pos.get(e + 1).map_or(self.clock.len(), |p| p.clock);
        &self.clock[start..end]
    }

    /// Whether event `a` happens before event `b` (or is it).
    fn hb(&self, a: usize, b: usize) -> bool {
        let Pos { slot, rank, .. } = self.pos[a];
        self.clock_of(b)
            .get(slot as usize)
            .is_some_and(|&c| c >= rank)
    }

    /// The slot of `tid`, given one when it has none.
    fn slot(&mut self, tid: Tid) -> usize {
        match self.slots.iter().position(|&t| t == tid) {
            Some(s) => s,
            None => {
                self.slots.push(tid);
                self.last_of.push(None);
                self.spawned_by.push(None);
                self.slots.len() - 1
            }
        }
    }

    /// The dense index of `obj`, given one when it has none.
    fn object(&mut self, obj: Oid) -> u32 {
        match self.object_ids.binary_search_by_key(&obj, |&(o, _)| o) {
            Ok(i) => self.object_ids[i].1,
            Err(i) => {
                let index = self.objects.len() as u32;
                self.object_ids.insert(i, (obj, index));
                self.objects.push(ObjState::default());
                index
            }
        }
    }

    /// Events covered.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Forgets the events from `len` on, newest first.
    pub fn truncate(&mut self, len: usize) {
        while self.pos.len() > len {
            let u = self.undo.pop().expect("one undo record per event");
            let p = self.pos.pop().expect("one position per event");
            self.last_of[p.slot as usize] = u.last_of;
            for _ in 0..u.spawned {
                let (c, prev) = self.spawn_undo.pop().expect("recorded");
                self.spawned_by[c] = prev;
            }
            for _ in 0..u.objects {
                match self.obj_undo.pop().expect("recorded") {
                    ObjUndo::Shared(o) => {
                        let (_, prev) = self.shared.pop().expect("pushed");
                        self.objects[o as usize].shared_head = prev;
                    }
                    ObjUndo::Excl(o, st) => self.objects[o as usize] = st,
                }
            }
            self.clock.truncate(p.clock);
        }
    }

    /// Collects into `preds` the direct predecessors of `events[k]` on each
    /// object it touches (the last exclusive access, or for an exclusive
    /// access the shared ones since, if any), into `candidates` those of
    /// other threads, and updates the objects' states.
    fn touch(&mut self, events: &[Ev], k: usize, preds: &mut Vec<usize>) -> u32 {
        let ev = &events[k];
        for &(obj, shared) in ev.accesses.iter() {
            let o = self.object(obj);
            let st = self.objects[o as usize];
            let before = preds.len();
            if shared || st.shared_head.is_none() {
                preds.extend(st.last_excl);
            } else {
                let mut at = st.shared_head;
                while let Some(i) = at {
                    let (e, prev) = self.shared[i as usize];
                    preds.push(e);
                    at = prev;
                }
            }
            for &d in &preds[before..] {
                if events[d].tid != ev.tid {
                    self.candidates.push((d, obj));
                }
            }
            if shared {
                self.shared.push((k, st.shared_head));
                self.objects[o as usize].shared_head = Some(self.shared.len() as u32 - 1);
                self.obj_undo.push(ObjUndo::Shared(o));
            } else {
                self.objects[o as usize] = ObjState {
                    last_excl: Some(k),
                    shared_head: None,
                };
                self.obj_undo.push(ObjUndo::Excl(o, st));
            }
        }
        ev.accesses.len() as u32
    }

    /// Adds `events[k]` for `k` = [`len`](Self::len) and appends its races
    /// to `out`.
    fn push(&mut self, events: &[Ev], out: &mut Vec<Race>) {
        let k = self.pos.len();
        let ev = &events[k];
        let t = self.slot(ev.tid);
        let prev_last = self.last_of[t];
        let mut preds = std::mem::take(&mut self.preds);
        preds.clear();
        self.candidates.clear();
        // Program order (or the spawn, for a thread's first event) first.
        preds.extend(prev_last.or(self.spawned_by[t]));
        let objects = self.touch(events, k, &mut preds);
        let start = self.clock.len();
        self.clock.resize(start + self.slots.len(), 0);
        for &p in &preds {
            let from = self.pos[p].clock;
            let (old, new) = self.clock.split_at_mut(start);
            let len = self.pos.get(p + 1).map_or(start, |q| q.clock) - from;
            for (c, &q) in new.iter_mut().zip(&old[from..from + len]) {
                *c = (*c).max(q);
            }
        }
        let rank = prev_last.map_or(1, |p| self.pos[p].rank + 1);
        self.clock[start + t] = rank;
        self.pos.push(Pos {
            slot: t as u32,
            rank,
            clock: start,
        });
        self.last_of[t] = Some(k);
        for &c in &ev.spawned {
            let s = self.slot(c);
            self.spawn_undo.push((s, self.spawned_by[s].replace(k)));
        }
        self.undo.push(Undo {
            last_of: prev_last,
            objects,
            spawned: ev.spawned.len() as u32,
        });
        let candidates = std::mem::take(&mut self.candidates);
        for &(d, obj) in &candidates {
            if let Some(at) = reversible(events, self, &preds, d, k, obj) {
                out.push(Race { at, k });
            }
        }
        self.candidates = candidates;
        self.preds = preds;
    }

    /// Brings the clocks to `events` (whose first `keep` events are those
    /// already covered) and returns the races `e ⋖ e'` whose later event
    /// `e'` is new (earlier ones were reversed when they first ran), with
    /// the blocking rules of the module documentation, in order of `e'`.
    pub fn races(&mut self, events: &[Ev], keep: usize) -> Vec<Race> {
        self.truncate(keep.min(self.len()));
        let mut out = Vec::new();
        while self.len() < events.len() {
            self.push(events, &mut out);
        }
        out.sort_by_key(|r| (r.k, r.at));
        out.dedup();
        out
    }

    /// The reversal of `race` (indices into the execution the clocks
    /// cover): the events after `e` that do not happen after it, then
    /// `e'`, into `v` (emptied first).
    pub fn reversal(&self, race: &Race, v: &mut Vec<usize>) {
        let Race { at, k } = *race;
        v.clear();
        v.extend((at + 1..k).filter(|&f| !self.hb(at, f)));
        v.push(k);
    }
}

/// The races of `events` whose later event is at `from` or later, computed
/// afresh (see [`Clocks::races`]), each with its reversal.
#[cfg(test)]
pub(crate) fn races(events: &[Ev], from: usize) -> Vec<(usize, Vec<usize>)> {
    let mut clocks = Clocks::default();
    clocks.races(&events[..from], 0);
    let races = clocks.races(events, from);
    reversals(&clocks, races)
}

/// Each of `races` with its reversal under `clocks`.
#[cfg(test)]
fn reversals(clocks: &Clocks, races: Vec<Race>) -> Vec<(usize, Vec<usize>)> {
    let reversal = |r: &Race| {
        let mut v = Vec::new();
        clocks.reversal(r, &mut v);
        (r.at, v)
    };
    races.iter().map(reversal).collect()
}

/// For a direct conflict of `d` before `k` on `obj`: the event `k` races
/// with (`d`, or the acquisition `d` released), or `None` when the pair is
/// not a race (an event between them) or cannot be reversed.
fn reversible(
    events: &[Ev],
    clocks: &Clocks,
    preds: &[usize],
    d: usize,
    k: usize,
    obj: Oid,
) -> Option<usize> {
    let (de, ke) = (&events[d], &events[k]);
    use SyncRole as R;
    let irreversible = match (de.role(), ke.role()) {
        (R::Exit, R::Join) | (R::NotifyOne | R::NotifyAll, R::WaitReacquire) => true,
        (R::BarrierArrive, R::BarrierDepart) => true,
        (R::Send, R::Receive) => de.message.is_some() && de.message == ke.message,
        // A std guest's `memory.atomic.notify` and a wake-up on its
        // address by a thread it found blocked (a wait without a timeout,
        // not woken yet): only a notification on that address, which
        // would follow `de`, could wake it earlier.
        _ => {
            de.op == Some(OpKind::MemNotify)
                && ke.op == Some(OpKind::MemWake)
                && de.found_blocked(ke.tid)
        }
    };
    if irreversible {
        return None;
    }
    let acquires = matches!(ke.role(), R::Acquire { .. } | R::WaitReacquire);
    let at = if acquires && matches!(de.role(), R::Release | R::WaitRelease) {
        // The acquisition by `d`'s thread that `d` ended.
        (0..d).rev().find(|&a| {
            events[a].tid == de.tid
                && matches!(events[a].role(), R::Acquire { .. } | R::WaitReacquire)
                && events[a].accesses.iter().any(|&(o, _)| o == obj)
        })?
    } else {
        d
    };
    // A race only if no other direct predecessor of `k` comes after `at`.
    let direct = preds.iter().all(|&p| p == d || !clocks.hb(at, p));
    direct.then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_trace::Access;

    fn ev(t: u64, op: OpKind, acc: &[Access]) -> Ev {
        Ev::new(Tid(t), 0, Some(op), acc)
    }

    #[test]
    fn writes_race_reads_commute() {
        let x = Oid(1);
        let w = |t| ev(t, OpKind::CellSet, &[Access::write(x)]);
        let r = |t| ev(t, OpKind::CellGet, &[Access::read(x)]);
        assert!(dependent(&w(1), &w(2)));
        assert!(dependent(&w(1), &r(2)));
        assert!(!dependent(&r(1), &r(2)));
        // w1 r2 r3 w4: w1 races r2 and r3, r2 and r3 race w4, not w1-w4.
        let e = [w(1), r(2), r(3), w(4)];
        let got = races(&e, 0);
        assert_eq!(
            got,
            vec![(0, vec![1]), (0, vec![2]), (1, vec![2, 3]), (2, vec![3])]
        );
    }

    #[test]
    fn a_lock_races_with_the_acquisition_not_the_release() {
        let m = Oid(9);
        let e = [
            ev(1, OpKind::MutexLock, &[Access::sync(m)]),
            ev(1, OpKind::MutexUnlock, &[Access::sync(m)]),
            ev(2, OpKind::MutexLock, &[Access::sync(m)]),
        ];
        let got = races(&e, 0);
        assert_eq!(got, vec![(0, vec![2])]);
    }

    /// A std guest's wait: the notification that wakes a thread blocked
    /// in a wait without a timeout cannot be reversed with the wake-up
    /// (nothing else wakes it), but it can when the thread was not blocked
    /// (a wait with a timeout may time out first).
    #[test]
    fn a_notify_and_the_wake_up_of_a_blocked_thread_are_irreversible() {
        let (x, q) = (Oid(1), Oid(2));
        let wait = ev(2, OpKind::MemWait, &[Access::read(x), Access::write(q)]);
        let notify = |blocked: Vec<Tid>| Ev {
            blocked,
            ..ev(1, OpKind::MemNotify, &[Access::write(q)])
        };
        let wake = ev(2, OpKind::MemWake, &[Access::write(q)]);
        let e = [wait.clone(), notify(vec![Tid(2)]), wake.clone()];
        assert_eq!(races(&e, 0), vec![(0, vec![1])]);
        let e = [wait, notify(vec![]), wake];
        assert_eq!(races(&e, 0), vec![(0, vec![1]), (1, vec![2])]);
    }

    #[test]
    fn clocks_kept_across_a_backtrack_match_fresh_ones() {
        let (x, y, m) = (Oid(1), Oid(2), Oid(9));
        let w = |t, o| ev(t, OpKind::CellSet, &[Access::write(o)]);
        let r = |t, o| ev(t, OpKind::CellGet, &[Access::read(o)]);
        let lock = |t| ev(t, OpKind::MutexLock, &[Access::sync(m)]);
        let unlock = |t| ev(t, OpKind::MutexUnlock, &[Access::sync(m)]);
        let first = [lock(1), w(1, x), r(2, x), r(3, x), unlock(1), w(2, y)];
        let second = [
            lock(1),
            w(1, x),
            r(3, x),
            w(2, x),
            unlock(1),
            lock(2),
            r(2, y),
        ];
        let mut kept = Clocks::default();
        let found = kept.races(&first, 0);
        assert_eq!(reversals(&kept, found), races(&first, 0));
        // Back to depth 2, then a different suffix: only it is computed.
        let found = kept.races(&second, 2);
        assert_eq!(kept.len(), second.len());
        let got = reversals(&kept, found);
        assert_eq!(got, races(&second, 2));
        assert!(!got.is_empty());
        // And back to the root.
        let found = kept.races(&first, 0);
        assert_eq!(reversals(&kept, found), races(&first, 0));
    }

    #[test]
    fn exit_and_join_are_ordered_but_not_reversed() {
        let l = Oid(3);
        let e = [
            ev(2, OpKind::Exit, &[Access::write(l)]),
            ev(1, OpKind::Join, &[Access::sync(l)]),
        ];
        assert!(races(&e, 0).is_empty());
    }
}
