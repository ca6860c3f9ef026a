//! Hybrid dynamic race detection (O'Callahan & Choi, PPoPP 2003), as phase 1
//! of RaceFuzzer uses it (Sen, "Race Directed Random Testing of Concurrent
//! Programs", PLDI 2008, §2.2 "Phase 1: Hybrid-Race Detection").
//!
//! Two memory events `MEM(σi, m, ai, ti, Li)` and `MEM(σj, m, aj, tj, Lj)`
//! are a potential race when `ti ≠ tj`, one of `ai`, `aj` is a write, the
//! locksets are disjoint and neither happens before the other. `(σi, σj)` is
//! then a *racing pair of statements*; here statements are
//! `StepInfo::site`s.
//!
//! Happens-before is the paper's: program order plus `SND(g) ≺ RCV(g)` for
//! each message `g`, where messages are thread start (the parent's spawn
//! step → the child's first step), thread termination (the target's exit →
//! the join), `notify` → the woken `wait`, and the program's own messages
//! (a send → the receive with the same `StepInfo::message`). Lock release →
//! acquire is deliberately *not* an edge: locks go into locksets, which is
//! what lets the hybrid detector predict races that did not happen in the
//! observed interleaving (and also what makes it imprecise, e.g. Fig. 1's
//! accesses to `x`, which RaceFuzzer's phase 2 then filters out).
//!
//! Read-write locks follow Eraser's rule (Savage et al., "Eraser: A Dynamic
//! Data Race Detector for Multithreaded Programs", TOCS 1997, §2.3
//! "Read-write locks"): a read is protected by the locks its thread holds
//! in any mode, a write only by those it holds exclusively, so two
//! accesses protected only by one lock that both threads hold in read mode
//! are not protected against each other when one of them writes. A
//! barrier orders everything before any arrival of a generation before
//! everything after its release (every arrival joins the generation's
//! clock and takes it; every departure takes it).
//!
//! Which operation does what comes from `OpKind::role` (one table in
//! `wasmrace-trace`), not from matching operation kinds here.
//!
//! Vector clocks give each event an epoch `(t, c)` (the event is thread `t`'s
//! `c`-th step); an earlier event `(t, c)` happens before the current step of
//! thread `u` exactly when `VC_u[t] >= c`.

use crate::program::StepInfo;
use std::collections::{BTreeMap, BTreeSet};
use wasmrace_trace::{AccessKind, Oid, SyncRole, Tid};

/// A racing pair of statements (sites), smaller site first.
pub type SitePair = (u64, u64);

/// The pair `{a, b}` in canonical order.
pub fn site_pair(a: u64, b: u64) -> SitePair {
    (a.min(b), a.max(b))
}

type VectorClock = BTreeMap<Tid, u64>;

fn join_into(into: &mut VectorClock, from: &VectorClock) {
    for (&t, &c) in from {
        let e = into.entry(t).or_insert(0);
        *e = (*e).max(c);
    }
}

/// What distinguishes two earlier accesses to one object for race checking.
/// Of several accesses with the same key only the latest is kept: if an
/// earlier one races with a later event, so does the latest (it follows the
/// earlier one in program order, and the later event cannot happen before it
/// without also following the earlier one), and it gives the same site pair.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct AccessKey {
    tid: Tid,
    site: u64,
    write: bool,
    lockset: BTreeSet<Oid>,
}

/// The hybrid detector; feed it every step of an execution with
/// [`observe`](Self::observe), and call
/// [`begin_execution`](Self::begin_execution) before each execution. Racing
/// pairs accumulate over executions.
#[derive(Clone, Debug, Default)]
pub struct HybridDetector {
    clocks: BTreeMap<Tid, VectorClock>,
    sync: SyncEdges,
    memory: MemoryEvents,
}

/// The synchronisation half of the detector: locksets and the clocks that
/// carry happens-before edges from one thread to another.
#[derive(Clone, Debug, Default)]
struct SyncEdges {
    /// Locks each thread holds, and whether in shared (read) mode: the `L`
    /// of its memory events.
    locksets: BTreeMap<Tid, BTreeMap<Oid, bool>>,
    /// Clock of each send, by message id.
    sent: BTreeMap<(Tid, u32), VectorClock>,
    /// Clock of each thread's exit, by the liveness object a join syncs on.
    exits: BTreeMap<Oid, VectorClock>,
    /// Threads waiting on each condition variable, in wait order: the host
    /// wakes `waiters[alt]` on `notify_one` and all of them on `notify_all`.
    waiters: BTreeMap<Oid, Vec<Tid>>,
    /// Mutexes released by a thread's `condvar.wait`, re-acquired by its wake.
    released: BTreeMap<Tid, Vec<Oid>>,
    /// Clock of the notification that woke a waiting thread.
    notified: BTreeMap<Tid, VectorClock>,
    /// Joined clock of every arrival at each barrier generation.
    generations: BTreeMap<Oid, VectorClock>,
}

/// The memory half: earlier accesses and the racing pairs found.
#[derive(Clone, Debug, Default)]
struct MemoryEvents {
    /// Earlier memory accesses per object, with the epoch of the latest.
    accesses: BTreeMap<Oid, BTreeMap<AccessKey, u64>>,
    pairs: BTreeSet<SitePair>,
    events: u64,
}

impl HybridDetector {
    /// A detector that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the previous execution's clocks and accesses (each execution
    /// is a fresh start), keeping the racing pairs found so far.
    pub fn begin_execution(&mut self) {
        self.clocks.clear();
        self.sync = SyncEdges::default();
        self.memory.accesses.clear();
    }

    /// The racing pairs of statements found so far.
    pub fn racing_pairs(&self) -> &BTreeSet<SitePair> {
        &self.memory.pairs
    }

    /// Memory events checked so far, over all executions.
    pub fn events(&self) -> u64 {
        self.memory.events
    }

    /// Processes one step of the current execution: the edges it receives
    /// (RCV events), its memory events (MEM), then the edges and locks it
    /// hands on (SND events, locksets).
    pub fn observe(&mut self, step: &StepInfo) {
        let t = step.tid;
        // Updated in place (disjoint from the other fields borrowed below):
        // taking it out and putting it back cost two more map operations.
        let clock = self.clocks.entry(t).or_default();
        // Program order: every step is a new event of its thread.
        *clock.entry(t).or_insert(0) += 1;
        let syncs: Vec<Oid> = step
            .accesses
            .iter()
            .filter(|a| a.kind.is_sync())
            .map(|a| a.obj)
            .collect();
        let role = step.op.map_or(SyncRole::None, |k| k.role());
        self.sync.incoming(role, step, &syncs, clock);
        self.memory.check(step, clock, self.sync.locksets.get(&t));
        self.sync.outgoing(role, step, &syncs, clock);
        // Thread start: the child's first event follows the spawn.
        if !step.spawned.is_empty() {
            let clock = clock.clone();
            for &child in &step.spawned {
                self.clocks.insert(child, clock.clone());
            }
        }
    }
}

impl SyncEdges {
    /// RCV events: joins into `clock` what happened before this step in
    /// other threads, before the step's memory events, so that a receive is
    /// ordered after everything its send follows.
    fn incoming(
        &mut self,
        role: SyncRole,
        step: &StepInfo,
        syncs: &[Oid],
        clock: &mut VectorClock,
    ) {
        let t = step.tid;
        match role {
            SyncRole::Receive => {
                if let Some(c) = step.message.and_then(|m| self.sent.get(&m)) {
                    join_into(clock, c);
                }
            }
            SyncRole::Join => {
                for o in syncs {
                    if let Some(c) = self.exits.get(o) {
                        join_into(clock, c);
                    }
                }
            }
            SyncRole::WaitReacquire => {
                if let Some(c) = self.notified.remove(&t) {
                    join_into(clock, &c);
                }
            }
            SyncRole::BarrierArrive => {
                // Every arrival before this one, and this one, happen
                // before the release; taking the joined clock now orders
                // nothing too early, as the thread does nothing more until
                // the release (the last arrival is the release).
                for o in syncs {
                    let g = self.generations.entry(*o).or_default();
                    join_into(g, clock);
                    join_into(clock, g);
                }
            }
            SyncRole::BarrierDepart => {
                for o in syncs {
                    if let Some(g) = self.generations.get(o) {
                        join_into(clock, g);
                    }
                }
            }
            _ => {}
        }
    }

    /// SND events and locksets: what this step hands on to other threads.
    fn outgoing(&mut self, role: SyncRole, step: &StepInfo, syncs: &[Oid], clock: &VectorClock) {
        let t = step.tid;
        match role {
            SyncRole::Acquire { shared } => {
                let held = self.locksets.entry(t).or_default();
                for o in syncs {
                    held.insert(*o, shared);
                }
            }
            SyncRole::Release => {
                let held = self.locksets.entry(t).or_default();
                for o in syncs {
                    held.remove(o);
                }
            }
            SyncRole::WaitRelease => {
                // The wait's accesses are the condvar and the mutex; the
                // mutex is the one this thread holds.
                let held = self.locksets.entry(t).or_default();
                let (mutexes, cvs): (Vec<Oid>, Vec<Oid>) =
                    syncs.iter().partition(|o| held.contains_key(o));
                for m in &mutexes {
                    held.remove(m);
                }
                self.released.insert(t, mutexes);
                for cv in cvs {
                    self.waiters.entry(cv).or_default().push(t);
                }
            }
            SyncRole::WaitReacquire => {
                let again = self.released.remove(&t).unwrap_or_default();
                self.locksets
                    .entry(t)
                    .or_default()
                    .extend(again.into_iter().map(|m| (m, false)));
                for cv in syncs {
                    if let Some(ws) = self.waiters.get_mut(cv) {
                        ws.retain(|&w| w != t);
                    }
                }
            }
            SyncRole::NotifyOne => {
                for cv in syncs {
                    let ws = self.waiters.entry(*cv).or_default();
                    if (step.alt as usize) < ws.len() {
                        let w = ws.remove(step.alt as usize);
                        self.notified.insert(w, clock.clone());
                    }
                }
            }
            SyncRole::NotifyAll => {
                for cv in syncs {
                    for w in self.waiters.remove(cv).unwrap_or_default() {
                        self.notified.insert(w, clock.clone());
                    }
                }
            }
            SyncRole::Send => {
                if let Some(m) = step.message {
                    self.sent.insert(m, clock.clone());
                }
            }
            SyncRole::Exit => {
                self.exits.insert(Oid::liveness(t), clock.clone());
                self.locksets.remove(&t);
            }
            _ => {}
        }
    }
}

impl MemoryEvents {
    /// MEM events: each read or write of the step against the earlier
    /// accesses to its object, with the lockset `held` while it runs.
    fn check(&mut self, step: &StepInfo, clock: &VectorClock, held: Option<&BTreeMap<Oid, bool>>) {
        let t = step.tid;
        let epoch = clock[&t];
        let lockset = |write: bool| -> BTreeSet<Oid> {
            held.map(|h| {
                h.iter()
                    .filter(|(_, &shared)| !(write && shared))
                    .map(|(&o, _)| o)
                    .collect()
            })
            .unwrap_or_default()
        };
        for a in &step.accesses {
            let write = match a.kind {
                AccessKind::Read => false,
                AccessKind::Write => true,
                AccessKind::Sync | AccessKind::SharedSync => continue,
            };
            self.events += 1;
            // A statement we cannot name cannot be directed in phase 2.
            if step.site == 0 {
                continue;
            }
            // Eraser's rule: a write is protected only by locks held
            // exclusively, a read by locks held in any mode.
            let lockset = lockset(write);
            let seen = self.accesses.entry(a.obj).or_default();
            for (k, &c) in seen.iter() {
                let ordered = clock.get(&k.tid).is_some_and(|&mine| mine >= c);
                if k.tid != t && (write || k.write) && k.lockset.is_disjoint(&lockset) && !ordered {
                    self.pairs.insert(site_pair(k.site, step.site));
                }
            }
            seen.insert(
                AccessKey {
                    tid: t,
                    site: step.site,
                    write,
                    lockset,
                },
                epoch,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_trace::{Access, OpKind};

    fn step(tid: u64, op: OpKind, site: u64, accesses: Vec<Access>) -> StepInfo {
        StepInfo {
            tid: Tid(tid),
            op: Some(op),
            site,
            accesses,
            ..StepInfo::default()
        }
    }

    const X: Oid = Oid(100);
    const M: Oid = Oid(200);
    const CV: Oid = Oid(300);

    fn spawn(parent: u64, children: &[u64]) -> StepInfo {
        StepInfo {
            spawned: children.iter().map(|&c| Tid(c)).collect(),
            ..step(parent, OpKind::Spawn, 1, vec![])
        }
    }

    fn run(steps: &[StepInfo]) -> BTreeSet<SitePair> {
        let mut d = HybridDetector::new();
        d.begin_execution();
        for s in steps {
            d.observe(s);
        }
        d.racing_pairs().clone()
    }

    #[test]
    fn unordered_conflicting_accesses_race_and_reads_do_not() {
        let w = |t, site| step(t, OpKind::CellSet, site, vec![Access::write(X)]);
        let r = |t, site| step(t, OpKind::CellGet, site, vec![Access::read(X)]);
        assert_eq!(
            run(&[spawn(1, &[2, 3]), w(2, 20), r(3, 10)]),
            BTreeSet::from([(10, 20)])
        );
        assert!(run(&[spawn(1, &[2, 3]), r(2, 20), r(3, 10)]).is_empty());
        // The parent's access before the spawn is ordered before the child's.
        assert!(run(&[w(1, 5), spawn(1, &[2]), w(2, 20)]).is_empty());
        // ... but not one after it.
        assert_eq!(
            run(&[spawn(1, &[2]), w(1, 5), w(2, 20)]),
            BTreeSet::from([(5, 20)])
        );
    }

    #[test]
    fn a_common_lock_hides_the_race_but_lock_order_is_no_edge() {
        let lock = |t| step(t, OpKind::MutexLock, 2, vec![Access::sync(M)]);
        let unlock = |t| step(t, OpKind::MutexUnlock, 3, vec![Access::sync(M)]);
        let w = |t, site| step(t, OpKind::CellSet, site, vec![Access::write(X)]);
        let both_locked = [
            spawn(1, &[2, 3]),
            lock(2),
            w(2, 20),
            unlock(2),
            lock(3),
            w(3, 30),
            unlock(3),
        ];
        assert!(run(&both_locked).is_empty());
        // Thread 3 writes after thread 2's critical section, without the
        // lock: a happens-before detector with lock edges would order them;
        // the hybrid detector predicts the race.
        let one_locked = [
            spawn(1, &[2, 3]),
            lock(2),
            w(2, 20),
            unlock(2),
            lock(3),
            unlock(3),
            w(3, 30),
        ];
        assert_eq!(run(&one_locked), BTreeSet::from([(20, 30)]));
    }

    #[test]
    fn joins_messages_and_notifications_order_events() {
        let w = |t, site| step(t, OpKind::CellSet, site, vec![Access::write(X)]);
        let exit = |t: u64| {
            step(
                t,
                OpKind::Exit,
                9,
                vec![Access::write(Oid::liveness(Tid(t)))],
            )
        };
        let join = |t, target: u64| {
            step(
                t,
                OpKind::Join,
                8,
                vec![Access::sync(Oid::liveness(Tid(target)))],
            )
        };
        assert!(run(&[spawn(1, &[2]), w(2, 20), exit(2), join(1, 2), w(1, 10)]).is_empty());
        let send = StepInfo {
            message: Some((Tid(2), 0)),
            ..step(
                2,
                OpKind::Send,
                21,
                vec![Access::write(Oid::mailbox(Tid(3)))],
            )
        };
        let recv = StepInfo {
            message: Some((Tid(2), 0)),
            ..step(
                3,
                OpKind::Recv,
                31,
                vec![Access::write(Oid::mailbox(Tid(3)))],
            )
        };
        assert!(run(&[
            spawn(1, &[2, 3]),
            w(2, 20),
            send.clone(),
            recv.clone(),
            w(3, 30)
        ])
        .is_empty());
        // Without the message identity there is no edge.
        let anonymous = StepInfo {
            message: None,
            ..recv.clone()
        };
        assert_eq!(
            run(&[spawn(1, &[2, 3]), w(2, 20), send, anonymous, w(3, 30)]),
            BTreeSet::from([(20, 30), (21, 31)])
        );
        // notify_one wakes waiters[alt]; the wake follows the notify and
        // re-acquires the mutex the wait released.
        let lock = |t| step(t, OpKind::MutexLock, 2, vec![Access::sync(M)]);
        let unlock = |t| step(t, OpKind::MutexUnlock, 3, vec![Access::sync(M)]);
        let wait = |t| {
            step(
                t,
                OpKind::CondvarWait,
                4,
                vec![Access::sync(CV), Access::sync(M)],
            )
        };
        let wake = |t| {
            step(
                t,
                OpKind::CondvarWake,
                5,
                vec![Access::sync(CV), Access::sync(M)],
            )
        };
        let notify = |t, alt| StepInfo {
            alt,
            ..step(t, OpKind::CondvarNotifyOne, 6, vec![Access::sync(CV)])
        };
        let y = Oid(101);
        let wy = |t, site| step(t, OpKind::CellSet, site, vec![Access::write(y)]);
        let trace = [
            spawn(1, &[2, 3]),
            lock(2),
            wait(2),
            w(3, 30),
            notify(3, 0),
            wy(3, 31),
            wake(2),
            wy(2, 22),
            w(2, 20),
            unlock(2),
        ];
        // x: ordered by notify -> wake. y: thread 2 holds M, thread 3 does
        // not, and 31 follows the notify: a race.
        assert_eq!(run(&trace), BTreeSet::from([(22, 31)]));
    }

    #[test]
    fn pairs_survive_executions_and_clocks_do_not() {
        let w = |t, site| step(t, OpKind::CellSet, site, vec![Access::write(X)]);
        let mut d = HybridDetector::new();
        d.begin_execution();
        d.observe(&spawn(1, &[2]));
        d.observe(&w(2, 20));
        d.observe(&w(1, 10));
        d.begin_execution();
        // A fresh execution does not compare with the old accesses.
        d.observe(&w(3, 30));
        assert_eq!(d.racing_pairs(), &BTreeSet::from([(10, 20)]));
        assert_eq!(d.events(), 3);
    }
}
