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
//!   causes, the last arrival at a barrier and a departure. They order the
//!   events (happens-before) but are not reversed;
//! - a lock acquisition that follows a release by another thread races,
//!   as in Nidhugg, with the *acquisition* that release ended: reversed,
//!   the second acquirer takes the lock first.

use std::collections::BTreeMap;
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
    pub accesses: Vec<(Oid, bool)>,
    pub spawned: Vec<Tid>,
    pub message: Option<(Tid, u32)>,
}

impl Ev {
    /// The event of `tid` taking `alt` with `accesses`.
    pub fn new(tid: Tid, alt: u32, op: Option<OpKind>, accesses: &[Access]) -> Ev {
        let mut merged: Vec<(Oid, bool)> = Vec::with_capacity(accesses.len());
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
        }
    }

    fn role(&self) -> SyncRole {
        self.op.map_or(SyncRole::None, OpKind::role)
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

/// A race to reverse: the reversal `v` (indices into the execution,
/// `notdep(e, E)` then `e'`) belongs to the wakeup tree or backtrack set at
/// depth `at`, the state right before `e`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Race {
    pub at: usize,
    pub v: Vec<usize>,
}

/// Per object: the last exclusive access and the shared ones since.
#[derive(Debug, Default)]
struct ObjState {
    last_excl: Option<usize>,
    shared_since: Vec<usize>,
}

/// What one event changed in an object's [`ObjState`], to undo it.
#[derive(Debug)]
enum ObjUndo {
    /// A shared access: pushed onto `shared_since`.
    Shared(Oid),
    /// An exclusive access: the state it replaced.
    Excl(Oid, Option<usize>, Vec<usize>),
}

/// What one event changed, to undo it when the path backtracks above it.
#[derive(Debug)]
struct Undo {
    tid: Tid,
    /// Its thread's previous last event.
    last_of: Option<usize>,
    /// The previous spawner of each thread it spawned.
    spawned_by: Vec<(Tid, Option<usize>)>,
    objects: Vec<ObjUndo>,
}

/// Happens-before of the current path, by vector clocks, kept per depth:
/// after backtracking, only the events from the first new one are
/// computed again (the state of every shorter prefix is restored by
/// undoing the events above it, newest first).
#[derive(Debug, Default)]
pub(crate) struct Clocks {
    /// Dense index of each thread, in order of first appearance. Never
    /// shrinks: an index only names a clock slot, so a thread keeps its
    /// slot across executions and the relation does not depend on it.
    index: BTreeMap<Tid, usize>,
    /// Per event: its thread's dense index and its 1-based rank in it.
    pos: Vec<(usize, u32)>,
    /// Per event: the events of each thread it happens after or is.
    clock: Vec<Vec<u32>>,
    undo: Vec<Undo>,
    last_of: BTreeMap<Tid, usize>,
    spawned_by: BTreeMap<Tid, usize>,
    objects: BTreeMap<Oid, ObjState>,
}

impl Clocks {
    /// Whether event `a` happens before event `b` (or is it).
    fn hb(&self, a: usize, b: usize) -> bool {
        let (t, rank) = self.pos[a];
        self.clock[b].get(t).is_some_and(|&c| c >= rank)
    }

    fn thread(&mut self, tid: Tid) -> usize {
        let n = self.index.len();
        *self.index.entry(tid).or_insert(n)
    }

    /// Events covered.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Forgets the events from `len` on, newest first.
    pub fn truncate(&mut self, len: usize) {
        while self.pos.len() > len {
            let u = self.undo.pop().expect("one undo record per event");
            match u.last_of {
                Some(p) => self.last_of.insert(u.tid, p),
                None => self.last_of.remove(&u.tid),
            };
            for (c, prev) in u.spawned_by.into_iter().rev() {
                match prev {
                    Some(p) => self.spawned_by.insert(c, p),
                    None => self.spawned_by.remove(&c),
                };
            }
            for o in u.objects.into_iter().rev() {
                match o {
                    ObjUndo::Shared(obj) => {
                        let st = self.objects.get_mut(&obj).expect("touched");
                        st.shared_since.pop();
                    }
                    ObjUndo::Excl(obj, last, shared) => {
                        let st = self.objects.get_mut(&obj).expect("touched");
                        st.last_excl = last;
                        st.shared_since = shared;
                    }
                }
            }
            self.pos.pop();
            self.clock.pop();
        }
    }

    /// Adds `events[k]` for `k` = [`len`](Self::len) and appends its races
    /// to `out`.
    fn push(&mut self, events: &[Ev], out: &mut Vec<Race>) {
        let k = self.pos.len();
        let ev = &events[k];
        let t = self.thread(ev.tid);
        let prev_last = self.last_of.get(&ev.tid).copied();
        // Program order (or the spawn, for a thread's first event) first.
        let local = prev_last.or(self.spawned_by.get(&ev.tid).copied());
        let mut preds: Vec<usize> = local.into_iter().collect();
        let mut candidates: Vec<(usize, Oid)> = Vec::new();
        let mut objects = Vec::with_capacity(ev.accesses.len());
        for &(obj, shared) in &ev.accesses {
            let st = self.objects.entry(obj).or_default();
            let before = preds.len();
            if shared || st.shared_since.is_empty() {
                preds.extend(st.last_excl);
            } else {
                preds.extend_from_slice(&st.shared_since);
            }
            for &d in &preds[before..] {
                if events[d].tid != ev.tid {
                    candidates.push((d, obj));
                }
            }
            if shared {
                st.shared_since.push(k);
                objects.push(ObjUndo::Shared(obj));
            } else {
                let old = std::mem::take(&mut st.shared_since);
                objects.push(ObjUndo::Excl(obj, st.last_excl.replace(k), old));
            }
        }
        let mut clock = vec![0u32; self.index.len()];
        for &p in &preds {
            for (c, &q) in clock.iter_mut().zip(&self.clock[p]) {
                *c = (*c).max(q);
            }
        }
        let rank = prev_last.map_or(1, |p| self.pos[p].1 + 1);
        clock[t] = rank;
        self.pos.push((t, rank));
        self.clock.push(clock);
        self.last_of.insert(ev.tid, k);
        let spawned_by = ev
            .spawned
            .iter()
            .map(|&c| (c, self.spawned_by.insert(c, k)))
            .collect();
        self.undo.push(Undo {
            tid: ev.tid,
            last_of: prev_last,
            spawned_by,
            objects,
        });
        for (d, obj) in candidates {
            if let Some(at) = reversible(events, self, &preds, d, k, obj) {
                let v = (at + 1..k)
                    .filter(|&f| !self.hb(at, f))
                    .chain([k])
                    .collect();
                out.push(Race { at, v });
            }
        }
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
        out.sort_by_key(|r| (r.v.last().copied(), r.at));
        out.dedup();
        out
    }
}

/// The races of `events` whose later event is at `from` or later, computed
/// afresh (see [`Clocks::races`]).
#[cfg(test)]
pub(crate) fn races(events: &[Ev], from: usize) -> Vec<Race> {
    let mut clocks = Clocks::default();
    clocks.races(&events[..from], 0);
    clocks.races(events, from)
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
        _ => false,
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
        let got: Vec<(usize, Vec<usize>)> = races(&e, 0).into_iter().map(|r| (r.at, r.v)).collect();
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
        let got: Vec<(usize, Vec<usize>)> = races(&e, 0).into_iter().map(|r| (r.at, r.v)).collect();
        assert_eq!(got, vec![(0, vec![2])]);
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
        assert_eq!(kept.races(&first, 0), races(&first, 0));
        // Back to depth 2, then a different suffix: only it is computed.
        let got = kept.races(&second, 2);
        assert_eq!(kept.len(), second.len());
        assert_eq!(got, races(&second, 2));
        assert!(!got.is_empty());
        // And back to the root.
        assert_eq!(kept.races(&first, 0), races(&first, 0));
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
