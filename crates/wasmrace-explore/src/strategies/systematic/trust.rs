//! A TruSt-style exhaustive exploration (Kokologiannakis, Marmanis,
//! Gladstein and Vafeiadis, "Truly stateless, optimal dynamic partial
//! order reduction", POPL 2022) transcribed to Mazurkiewicz traces over
//! steps that touch one object each: every execution computes its
//! alternatives (child jobs) from itself alone, with no wakeup tree and no
//! sleep set, so that jobs run on any thread (`dpor --dpor trust`, `check
//! --jobs N`). The design and its validation against brute force are
//! `docs/design/trust-mazurkiewicz.md` (the model it follows is
//! `docs/design/pop-proto/trustcf.py`).
//!
//! **A job** is a graph: its events in the order they were added (the
//! *stamp*) and the order of every conflicting pair of different threads.
//! Running it replays a linearization, then runs on: always the thread of
//! least `Tid` that can go on, which appends each new event after
//! everything it conflicts with (its *maximal* placement). A thread found
//! blocked there gets a *blocked attempt*, an event that only waits, and
//! stops. Each new event's other placements are child jobs:
//!
//! - a read placed before writes of its object it need not see;
//! - a write *revisiting* an earlier event `b` of its object (placed before
//!   it), deleting the events added after `b` that the write does not see
//!   (its *porf*), allowed only if `b` and every deleted event were added
//!   maximally, so that the deleted part is what the runs on re-create;
//! - the other alternatives of a `choose` (maximal only with the first).
//!
//! Whether an event is a blocked attempt is settled when its job replays
//! (a revisit can free a blocked lock, or block one). A run in which a
//! stopped thread could go on at the end is *wasted* (the real execution
//! goes on, and the enabling event's revisit runs it).
//!
//! **Order and threads.** A job's key is its parent's plus the stamp of
//! the event that made it (later first) and its rank among that event's
//! placements, so keys sort jobs in the order one thread runs them (last
//! made first). Workers share jobs through a
//! [`SubtreePool`](crate::explorer::steal::SubtreePool), each job a
//! subtree whose payload is its graph, and the pool numbers the bug and
//! cuts the budget in key order: the report is one thread's, but for the
//! counters below when a bug or the budget cut the run (the threads ran
//! past it).
//!
//! **What it cannot prove, it says.** A step over several objects (a
//! condvar wait, the registry) is not placed: its execution runs on, but
//! nothing after it is explored, and the run is not exhausted. Under fair
//! scheduling a job whose order runs a hidden thread is dropped, a limit
//! reported as a bound (`--fairness-bound`), as `dpor`'s dropped
//! reversals are. Jobs hold graphs, whose order is quadratic in a
//! spinning execution's length: past `--frontier-mb` per worker the run
//! stops, not exhausted.

use crate::explorer::partition::Split;
use crate::explorer::steal::{Payload, Subtree, SubtreePool, Taken};
use crate::explorer::visits::NO_EXPANSION;
use crate::program::{StepInfo, ThreadView};
use crate::splitting::Splitting;
use crate::strategy::{BoundHit, Capabilities, Context, Outcome, Start, Stat, Strategy};
use std::collections::BTreeSet;
use std::sync::Arc;
use wasmrace_trace::{Access, Decision, OpKind, Tid};

/// One event of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ev {
    tid: Tid,
    /// What it does.
    op: OpKind,
    /// 1-based index among its thread's events.
    idx: u32,
    /// The one object it touches, if any.
    acc: Option<Access>,
    /// The alternative taken, and how many there were.
    alt: u32,
    alts: u32,
    /// A blocked attempt: the thread could not run here and stopped.
    blocked: bool,
    /// Threads this event created.
    spawned: Vec<Tid>,
}

impl Ev {
    fn conflicts(&self, other: &Ev) -> bool {
        self.tid != other.tid
            && match (self.acc, other.acc) {
                (Some(a), Some(b)) => a.conflicts(&b),
                _ => false,
            }
    }
    /// Placed after `x`, this event sees `x`'s effect: `x` changes the
    /// object this event touches.
    fn sees(&self, x: &Ev) -> bool {
        match (self.acc, x.acc) {
            (Some(a), Some(b)) => a.obj == b.obj && !b.kind.is_shared(),
            _ => false,
        }
    }
}

/// A graph: events in stamp order and the order of conflicting pairs.
#[derive(Clone, Debug, Default)]
struct Graph {
    evs: Vec<Ev>,
    /// `(x, y)`: `evs[x]` before `evs[y]`, both conflicting, different threads.
    before: BTreeSet<(usize, usize)>,
    /// Per event, the events of `before` it follows.
    into: Vec<Vec<usize>>,
    /// Per event, its thread's previous event, or the spawn that made its
    /// thread (for a first event).
    prev: Vec<Option<usize>>,
    /// Per event, whether it was added maximally ([`Graph::maximal`]),
    /// kept because revisits ask it of every event they would delete.
    max: Vec<bool>,
}

impl Graph {
    fn new(evs: Vec<Ev>, before: BTreeSet<(usize, usize)>) -> Graph {
        let n = evs.len();
        let mut into = vec![Vec::new(); n];
        for &(x, y) in &before {
            into[y].push(x);
        }
        let at: std::collections::HashMap<(Tid, u32), usize> = evs
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.tid, e.idx), i))
            .collect();
        let mut spawner = std::collections::HashMap::new();
        for (i, e) in evs.iter().enumerate() {
            for t in &e.spawned {
                spawner.insert(*t, i);
            }
        }
        let prev = (evs.iter())
            .map(|e| match e.idx {
                1 => spawner.get(&e.tid).copied(),
                i => at.get(&(e.tid, i - 1)).copied(),
            })
            .collect();
        // Conflicting pairs are all ordered: an event is maximal unless it
        // is before one added earlier (or takes another alternative).
        let mut max: Vec<bool> = evs.iter().map(|e| e.alt == 0).collect();
        for &(x, y) in &before {
            if y < x {
                max[x] = false;
            }
        }
        Graph {
            evs,
            before,
            into,
            prev,
            max,
        }
    }

    /// Adds `a` last, after every event it conflicts with (its maximal
    /// placement), in place.
    fn push(&mut self, a: Ev) {
        let at = self.evs.len();
        let into: Vec<usize> = (0..at).filter(|&i| self.evs[i].conflicts(&a)).collect();
        self.before.extend(into.iter().map(|&i| (i, at)));
        self.prev.push(self.prev_of(&a));
        self.into.push(into);
        self.max.push(a.alt == 0);
        self.evs.push(a);
    }

    /// The events `i` directly follows.
    fn preds(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.into[i].iter().copied().chain(self.prev[i])
    }

    /// The event a new event `e` would follow in program order (or the
    /// spawn that made its thread).
    fn prev_of(&self, e: &Ev) -> Option<usize> {
        if e.idx > 1 {
            (self.evs.iter()).position(|x| x.tid == e.tid && x.idx == e.idx - 1)
        } else {
            self.evs.iter().position(|x| x.spawned.contains(&e.tid))
        }
    }

    /// The causal past (inclusive) of `start`.
    fn past(&self, start: impl IntoIterator<Item = usize>) -> Vec<bool> {
        let mut seen = vec![false; self.evs.len()];
        let mut stack: Vec<usize> = start.into_iter().collect();
        while let Some(i) = stack.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                stack.extend(self.preds(i));
            }
        }
        seen
    }

    /// The events causally after `b` (inclusive), given a linearization
    /// `order` of the graph (one pass: an event's predecessors come first).
    fn future(&self, b: usize, order: &[usize]) -> Vec<bool> {
        let mut after = vec![false; self.evs.len()];
        after[b] = true;
        let from = order.iter().position(|&i| i == b).unwrap_or(0);
        for &i in &order[from..] {
            if !after[i] && self.preds(i).any(|p| after[p]) {
                after[i] = true;
            }
        }
        after
    }

    /// `a`'s porf: its program-order past and the events before it whose
    /// effect it sees, transitively (not the reads it merely follows).
    fn porf(&self, start: Vec<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.evs.len()];
        let mut stack = start;
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            let e = &self.evs[i];
            stack.extend(self.prev[i]);
            stack.extend(
                self.into[i]
                    .iter()
                    .copied()
                    .filter(|&x| e.sees(&self.evs[x])),
            );
        }
        seen
    }

    /// Whether `e` was added maximally: after every conflicting event
    /// added before it, and with its first alternative.
    fn maximal(&self, e: usize) -> bool {
        self.max[e]
    }

    /// A linearization: events in an order that respects the graph, the
    /// least-stamped ready event first.
    fn linearize(&self) -> Vec<usize> {
        let n = self.evs.len();
        let mut waiting: Vec<usize> = (0..n).map(|i| self.preds(i).count()).collect();
        let mut next = vec![Vec::new(); n];
        for i in 0..n {
            for p in self.preds(i) {
                next[p].push(i);
            }
        }
        let mut ready: BTreeSet<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for &j in &next[i] {
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready.insert(j);
                }
            }
        }
        assert_eq!(order.len(), n, "a graph is acyclic");
        order
    }

    /// This graph without the events `drop` marks, with `a` added last,
    /// after the events `before_a` marks and before the other conflicting
    /// ones.
    fn with(&self, drop: &[bool], a: Ev, before_a: &[bool]) -> Graph {
        let mut map = vec![usize::MAX; self.evs.len()];
        let mut evs = Vec::new();
        for (i, e) in self.evs.iter().enumerate() {
            if !drop[i] {
                map[i] = evs.len();
                evs.push(e.clone());
            }
        }
        let mut before: BTreeSet<(usize, usize)> = (self.before.iter())
            .filter(|&&(x, y)| !drop[x] && !drop[y])
            .map(|&(x, y)| (map[x], map[y]))
            .collect();
        let at = evs.len();
        for (i, e) in self.evs.iter().enumerate() {
            if !drop[i] && e.conflicts(&a) {
                before.insert(if before_a[i] {
                    (map[i], at)
                } else {
                    (at, map[i])
                });
            }
        }
        evs.push(a);
        Graph::new(evs, before)
    }

    /// The graphs in which `a`, the next event, is placed other than
    /// maximally (see the module documentation).
    fn placements(&self, a: &Ev) -> Vec<Graph> {
        let n = self.evs.len();
        let conf: Vec<usize> = (0..n).filter(|&i| self.evs[i].conflicts(a)).collect();
        let mut out = Vec::new();
        let Some(acc) = a.acc.filter(|_| !conf.is_empty()) else {
            return out;
        };
        let cp = self.past(self.prev_of(a));
        // Computed once, and only when some placement needs it.
        let mut order: Option<Vec<usize>> = None;
        // A failed compare-exchange only reads, but placed before a write
        // it saw it may succeed: it is placed as the write it may become.
        if acc.kind.is_shared() && a.op != OpKind::AtomicCompareExchange {
            // Before the writes of a suffix of the object's chain.
            let order = self.linearize();
            let mut chain = conf.clone();
            chain.sort_by_key(|c| order.iter().position(|o| o == c));
            for j in 0..chain.len() {
                let p = self.past(cp_iter(&cp).chain(chain[..j].iter().copied()));
                if chain[j..].iter().any(|&c| p[c]) {
                    continue;
                }
                out.push(self.with(&vec![false; n], a.clone(), &p));
            }
            return out;
        }
        let mut seen = BTreeSet::new();
        for &b in &conf {
            // A join placed before the exit it waits for could not run.
            if cp[b] || (a.op == OpKind::Join && self.evs[b].op == OpKind::Exit) {
                continue;
            }
            // Whatever else is placed, `b` must have been added maximally.
            if !self.maximal(b) {
                continue;
            }
            // Before `b` means after everything of its object added before
            // it, and maybe after later events `a` sees that are not after
            // `b` (before `a`, they would put `b` before `a`).
            let order = order.get_or_insert_with(|| self.linearize());
            let after_b = self.future(b, order);
            let optional: Vec<usize> = conf
                .iter()
                .copied()
                .filter(|&c| c > b && a.sees(&self.evs[c]) && !after_b[c])
                .collect();
            assert!(optional.len() <= 16, "trust prototype: too many placements");
            for mask in 0..(1u32 << optional.len()) {
                let mut s: Vec<usize> = conf.iter().copied().filter(|&c| c < b).collect();
                s.extend(
                    (0..optional.len())
                        .filter(|k| mask >> k & 1 == 1)
                        .map(|k| optional[k]),
                );
                // The closure may bring in more of the object's events
                // (a read before a write `a` sees): they are before `a` too.
                let p = self.past(cp_iter(&cp).chain(s.iter().copied()));
                if p[b] {
                    continue;
                }
                let mut start: Vec<usize> = self.prev_of(a).into_iter().collect();
                start.extend(
                    conf.iter()
                        .copied()
                        .filter(|&c| p[c] && a.sees(&self.evs[c])),
                );
                let kept = self.porf(start);
                let drop: Vec<bool> = (0..n).map(|e| e > b && !kept[e]).collect();
                if (0..n).any(|e| drop[e] && p[e]) {
                    continue;
                }
                if (0..n).any(|e| drop[e] && !self.maximal(e)) {
                    continue;
                }
                let key = (
                    drop.clone(),
                    conf.iter().map(|&c| p[c] && !drop[c]).collect::<Vec<_>>(),
                );
                if seen.insert(key) {
                    out.push(self.with(&drop, a.clone(), &p));
                }
            }
        }
        out
    }
}

/// The one object a step touches, with the strongest way it touches it
/// (a write beside a read of one object is a write); `Err` for a step
/// over several objects, which the prototype cannot place.
fn one_access(accesses: &[Access]) -> Result<Option<Access>, ()> {
    let mut out: Option<Access> = None;
    for a in accesses {
        match out {
            None => out = Some(*a),
            Some(o) if o.obj != a.obj => return Err(()),
            Some(o) if o.kind.is_shared() && !a.kind.is_shared() => out = Some(*a),
            Some(_) => {}
        }
    }
    Ok(out)
}

fn debug_divergence(g: &Graph, i: usize, step: &StepInfo) {
    let e = &g.evs[i];
    eprintln!(
        "diverged at stamp {i}: graph {:?} / step {:?} {:?}",
        (e.tid.0 % 10000, e.idx, e.op, e.acc),
        step.op,
        step.accesses
    );
    for (k, x) in g.evs.iter().enumerate() {
        if x.tid == e.tid || k + 1 == g.evs.len() {
            eprintln!(
                "   stamp {k}: {:?} {} {:?} {:?} blocked {}",
                x.tid.0 % 10000,
                x.idx,
                x.op,
                x.acc.map(|a| (a.obj.0 % 10000, a.kind)),
                x.blocked
            );
        }
    }
    let last = g.evs.len() - 1;
    eprintln!(
        "   last's order: {:?}",
        g.before
            .iter()
            .filter(|&&(x, y)| x == last || y == last)
            .collect::<Vec<_>>()
    );
}

fn cp_iter(cp: &[bool]) -> impl Iterator<Item = usize> + '_ {
    cp.iter().enumerate().filter(|(_, &x)| x).map(|(i, _)| i)
}

/// The memory a worker's jobs may hold by default, in MiB (`--frontier-mb`).
pub const DEFAULT_FRONTIER_MB: u64 = 1024;

/// A job: a graph to run, and its place in the one-thread exploration
/// order (see [`Trust::order_key`](crate::Splitting::order_key)).
#[derive(Clone, Debug)]
struct Job {
    graph: Graph,
    key: Vec<u32>,
}

impl Job {
    /// About the bytes the job holds: its events and its order, with the
    /// overhead of their collections.
    fn bytes(&self) -> u64 {
        let g = &self.graph;
        let ev = std::mem::size_of::<Ev>() + 40;
        let spawned: usize = g.evs.iter().map(|e| e.spawned.len() * 8).sum();
        (g.evs.len() * ev + spawned + g.before.len() * 48 + self.key.len() * 4) as u64
    }

    /// The whole exploration: the empty graph, with the pool's root key.
    fn root() -> Job {
        Job {
            graph: Graph::default(),
            key: vec![0],
        }
    }

    /// The job another worker handed over through the pool.
    fn from_subtree(t: Subtree) -> Job {
        let graph = (t.payload)
            .and_then(|p| p.0.downcast::<Graph>().ok())
            .map(Arc::unwrap_or_clone)
            .unwrap_or_default();
        Job { graph, key: t.key }
    }

    /// This job as a subtree for the pool.
    fn into_subtree(self) -> Subtree {
        Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: self.key,
            exp: NO_EXPANSION,
            then: Vec::new(),
            payload: Some(Payload(Arc::new(self.graph))),
        }
    }
}

/// The execution in progress.
#[derive(Debug, Default)]
struct Run {
    graph: Graph,
    /// The linearization to replay, and how far the replay got.
    order: Vec<usize>,
    at: usize,
    /// Threads stopped at a blocked attempt.
    stopped: BTreeSet<Tid>,
    /// The free run's event `decide` chose, awaiting its step.
    pending: Option<Ev>,
    /// A replayed step was not the graph's event.
    diverged: bool,
    /// A step over several objects ran: the rest of the execution runs
    /// on, least `Tid` first, unrecorded and with no alternatives.
    untracked: bool,
    /// The job's place in the exploration order.
    key: Vec<u32>,
}

/// An event of the previous execution, in the order it ran: who, which,
/// and whether it was a step (else a blocked attempt).
type Ran = (Tid, u32, u32, Option<Access>, bool);

/// The TruSt-style exploration; see the module documentation.
#[derive(Debug, Default)]
pub struct Trust {
    /// Jobs to run, the next on top: their keys fall from bottom to top.
    jobs: Vec<Job>,
    /// The previous execution's events, to resume where a job shares them.
    last: Vec<Ran>,
    /// Which job runs next: the last made (0), or, to show that the jobs
    /// do not depend on one another, one picked by this seed's stream.
    shuffle: u64,
    run: Option<Run>,
    /// The key of the last job begun.
    key: Vec<u32>,
    started: bool,
    executions: u64,
    wasted: u64,
    infeasible: u64,
    repeated: u64,
    /// Steps over several objects met (nothing after one is explored).
    unsupported: u64,
    /// Jobs dropped because fair scheduling hid the thread to replay.
    unfair: u64,
    /// The bytes this worker's own jobs hold ([`Job::bytes`]), the most
    /// they may hold (`--frontier-mb`), and the peak.
    frontier: u64,
    max_frontier: u64,
    peak_frontier: u64,
    /// The jobs outgrew `max_frontier`: the run stopped, not exhausted.
    full: bool,
    /// The pool shared with the other workers of the run (`check
    /// --jobs`), if any, and what this worker knows of it.
    pool: Option<Arc<SubtreePool>>,
    shared: Shared,
}

/// A worker's view of the pool it shares (see [`Trust::next_shared`]).
#[derive(Debug, Default)]
struct Shared {
    /// Changes whenever the next job does not directly follow the last
    /// in the exploration order (one taken from the pool).
    stretch: u64,
    /// Jobs after this key are not run (a bug's, or the budget's cut).
    threshold: Option<Vec<u32>>,
    threshold_seen: u64,
    told_abandoned: bool,
    /// The pool said the run is over, and whether everything was explored.
    done: Option<bool>,
}

impl Trust {
    /// A new exploration, its jobs holding at most
    /// [`DEFAULT_FRONTIER_MB`] per worker.
    pub fn new() -> Self {
        Self::with_frontier_mb(DEFAULT_FRONTIER_MB)
    }

    /// A new exploration whose jobs hold at most `mb` MiB per worker
    /// (`--frontier-mb`): past it the run stops, not exhausted.
    pub fn with_frontier_mb(mb: u64) -> Self {
        Trust {
            max_frontier: mb.saturating_mul(1 << 20),
            ..Self::default()
        }
    }

    /// An exploration that takes its jobs in an order drawn from `seed`
    /// (not the last made first): the same executions, in another order.
    pub fn shuffled(seed: u64) -> Self {
        Trust {
            shuffle: seed | 1,
            ..Self::new()
        }
    }

    /// Runs that ended with a stopped thread able to go on.
    pub fn wasted(&self) -> u64 {
        self.wasted
    }

    /// Jobs whose replay found a thread where the graph said otherwise.
    pub fn infeasible(&self) -> u64 {
        self.infeasible
    }

    /// Runs that repeated a trace (two blocked attempts out of stamp order).
    pub fn repeated(&self) -> u64 {
        self.repeated
    }

    fn next_idx(graph: &Graph, tid: Tid) -> u32 {
        graph.evs.iter().filter(|e| e.tid == tid).count() as u32 + 1
    }

    /// An event for thread `t`'s pending operation.
    fn pending_ev(graph: &Graph, t: &ThreadView, alt: u32, blocked: bool) -> Ev {
        Ev {
            tid: t.tid,
            op: t.pending.op,
            idx: Self::next_idx(graph, t.tid),
            acc: one_access(&t.pending.accesses).unwrap_or(None),
            alt,
            alts: t.pending.alts,
            blocked,
            spawned: Vec::new(),
        }
    }

    /// Adds the new event `ev` to the run's graph, pushing its other
    /// placements and alternatives as jobs.
    fn add(&mut self, ev: Ev) {
        let run = self.run.as_mut().expect("a run");
        let mut children = run.graph.placements(&ev);
        if ev.alt == 0 && ev.acc.is_none() {
            for alt in 1..ev.alts {
                let n = run.graph.evs.len();
                let alt_ev = Ev { alt, ..ev.clone() };
                children.push(run.graph.with(&vec![false; n], alt_ev, &vec![true; n]));
            }
        }
        let at = run.graph.evs.len();
        run.graph.push(ev);
        run.order.push(at);
        run.at = run.order.len();
        // Children explored after this run's own continuation: pushed in
        // reverse so that the first placement pops first. Their keys say
        // so: a later event's children come first, and among one event's,
        // the first placement.
        let parent = &run.key;
        let jobs = children.into_iter().enumerate().map(|(c, graph)| {
            let mut key = Vec::with_capacity(parent.len() + 2);
            key.extend_from_slice(parent);
            key.extend([u32::MAX - at as u32, c as u32]);
            Job { graph, key }
        });
        let jobs: Vec<Job> = jobs.collect();
        let bytes: u64 = jobs.iter().map(Job::bytes).sum();
        self.frontier += bytes;
        self.peak_frontier = self.peak_frontier.max(self.frontier);
        self.jobs.extend(jobs.into_iter().rev());
        if self.frontier > self.max_frontier {
            self.outgrown();
        }
    }

    /// The jobs outgrew `--frontier-mb`: every worker stops.
    fn outgrown(&mut self) {
        self.full = true;
        self.jobs.clear();
        self.frontier = 0;
        if let Some(pool) = &self.pool {
            pool.stop_at(self.frontier_hit());
        }
    }

    fn frontier_hit(&self) -> BoundHit {
        BoundHit {
            bound: "job memory (MiB)",
            value: self.max_frontier >> 20,
            knob: "--frontier-mb",
        }
    }

    /// Takes job `at` off this worker's stack.
    fn take_own(&mut self, at: usize) -> Job {
        let job = self.jobs.swap_remove(at);
        self.frontier = self.frontier.saturating_sub(job.bytes());
        job
    }

    /// The next job to run, `None` when there is none.
    fn next_job(&mut self) -> Option<Job> {
        if let Some(pool) = self.pool.clone() {
            self.started = true;
            return self.next_shared(&pool);
        }
        if !std::mem::replace(&mut self.started, true) {
            return Some(Job::root());
        }
        if self.jobs.is_empty() {
            return None;
        }
        let at = if self.shuffle == 0 {
            self.jobs.len() - 1
        } else {
            // xorshift: any order will do, as long as it is not the stack's.
            self.shuffle ^= self.shuffle << 13;
            self.shuffle ^= self.shuffle >> 7;
            self.shuffle ^= self.shuffle << 17;
            (self.shuffle % self.jobs.len() as u64) as usize
        };
        Some(self.take_own(at))
    }

    /// The next job of a worker sharing `pool`: its own next, unless a
    /// bug or the budget's cut made it useless; the older half of its own
    /// goes to the pool when another worker waits; from the pool once it
    /// has none.
    ///
    /// A worker's own jobs are a stack whose keys fall from bottom to top,
    /// and it runs the top first, so its executions follow one another in
    /// the exploration order (one stretch, see
    /// [`steal`](crate::explorer::steal)) until it takes a job from the
    /// pool: what it donates is its bottom, the jobs that come after all
    /// it keeps. For the same reason a threshold below the top is below
    /// all of them.
    fn next_shared(&mut self, pool: &SubtreePool) -> Option<Job> {
        let sh = &mut self.shared;
        if let Some(threshold) = pool.threshold_moved(&mut sh.threshold_seen) {
            sh.threshold = threshold;
        }
        let late = |j: &Job| sh.threshold.as_ref().is_some_and(|t| j.key > *t);
        if self.jobs.last().is_some_and(late) {
            self.jobs.clear();
            self.frontier = 0;
            if !std::mem::replace(&mut sh.told_abandoned, true) {
                pool.abandoned();
            }
        }
        if self.jobs.len() > 1 && pool.hungry() {
            let half = self.jobs.len() / 2;
            let given: Vec<Job> = self.jobs.drain(..half).collect();
            let bytes: u64 = given.iter().map(Job::bytes).sum();
            self.frontier = self.frontier.saturating_sub(bytes);
            pool.give(given.into_iter().map(Job::into_subtree).collect());
        }
        if !self.jobs.is_empty() {
            return Some(self.take_own(self.jobs.len() - 1));
        }
        match pool.take() {
            Taken::Subtree(t) => {
                self.shared.stretch += 1;
                Some(Job::from_subtree(t))
            }
            Taken::Done { exhausted } => {
                self.shared.done = Some(exhausted);
                None
            }
            Taken::Stopped => None,
        }
    }

    /// The free run's choice: the thread of least `Tid` that can go on.
    /// A thread fair scheduling hides is passed over, not blocked: it
    /// comes back once the spinning thread above it moved.
    fn free(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let mut threads: Vec<(usize, &ThreadView)> = ctx.threads.iter().enumerate().collect();
        threads.sort_by_key(|(_, t)| t.tid);
        for (i, t) in threads {
            let run = self.run.as_ref().expect("a run");
            if run.stopped.contains(&t.tid) || ctx.is_hidden(i) {
                continue;
            }
            if t.pending.enabled {
                let ev = Self::pending_ev(&run.graph, t, 0, false);
                self.run.as_mut().expect("a run").pending = Some(ev);
                return Some(Decision::new(t.tid, 0));
            }
            // A join can only ever follow the exit it waits for: added
            // once it can run, it needs no blocked attempt (nor wastes a run).
            if t.pending.op == OpKind::Join {
                continue;
            }
            let ev = Self::pending_ev(&run.graph, t, 0, true);
            self.ran(&ev, false);
            self.add(ev);
            self.run.as_mut().expect("a run").stopped.insert(t.tid);
        }
        // Only stopped threads could go on: the real execution goes on.
        self.wasted += 1;
        None
    }

    /// Takes over the events the job shares with the previous execution,
    /// in the order that ran them (the explorer resumes after their
    /// steps); returns how many steps that is.
    fn resume(&mut self, run: &mut Run) -> usize {
        let mut steps = 0;
        let mut k = 0;
        while k < run.order.len() && k < self.last.len() {
            let e = &mut run.graph.evs[run.order[k]];
            let (tid, idx, alt, acc, step) = self.last[k];
            if (tid, idx, alt, acc) != (e.tid, e.idx, e.alt, e.acc) {
                break;
            }
            e.blocked = !step;
            if step {
                steps += 1;
            } else {
                run.stopped.insert(tid);
            }
            k += 1;
        }
        // A resume point after a blocked attempt is the step count before it.
        self.last.truncate(k);
        run.at = k;
        steps
    }

    fn ran(&mut self, e: &Ev, step: bool) {
        self.last.push((e.tid, e.idx, e.alt, e.acc, step));
    }

    /// The replay's next decision, settling blocked attempts on the way.
    fn replay(&mut self, ctx: &Context<'_>) -> Option<Option<Decision>> {
        let run = self.run.as_mut().expect("a run");
        while run.at < run.order.len() {
            let i = run.order[run.at];
            let (tid, idx) = (run.graph.evs[i].tid, run.graph.evs[i].idx);
            let last = !run.graph.evs.iter().any(|x| x.tid == tid && x.idx > idx);
            let e = &mut run.graph.evs[i];
            let Some(at) = ctx.threads.iter().position(|t| t.tid == e.tid) else {
                self.infeasible += 1;
                return Some(None);
            };
            if ctx.is_hidden(at) {
                // This order is not fair: a limit of the reduction under
                // fair scheduling, not a proof (see `bound_hit`).
                self.unfair += 1;
                return Some(None);
            }
            let t = &ctx.threads[at];
            if t.pending.enabled {
                e.blocked = false;
                return Some(Some(Decision::new(e.tid, e.alt)));
            }
            // A blocked attempt: the prediction is all there is to compare.
            if !last || one_access(&t.pending.accesses) != Ok(e.acc) {
                if std::env::var_os("TRUST_DEBUG").is_some() {
                    eprintln!(
                        "blocked mismatch: last {last} graph {:?} / pending {:?}",
                        (e.tid, e.idx, e.op, e.acc),
                        t.pending
                    );
                }
                self.infeasible += 1;
                return Some(None);
            }
            e.blocked = true;
            self.last.push((e.tid, e.idx, e.alt, e.acc, false));
            run.stopped.insert(e.tid);
            run.at += 1;
        }
        None
    }
}

impl Strategy for Trust {
    fn name(&self) -> &str {
        "trust"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.full {
            return None;
        }
        let Job { graph, key } = self.next_job()?;
        self.key.clone_from(&key);
        let order = graph.linearize();
        let mut run = Run {
            graph,
            order,
            key,
            ..Run::default()
        };
        let steps = self.resume(&mut run);
        self.run = Some(run);
        self.executions += 1;
        Some(match steps {
            0 => Start::Fresh,
            prefix_len => Start::Resume { prefix_len },
        })
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        if self.run.as_ref().is_some_and(|r| r.diverged) {
            self.infeasible += 1;
            return None;
        }
        if self.run.as_ref().is_some_and(|r| r.untracked) {
            let t = ctx.threads.iter().filter(|t| t.pending.enabled);
            return t.min_by_key(|t| t.tid).map(|t| Decision::new(t.tid, 0));
        }
        match self.replay(ctx) {
            Some(d) => d,
            None => self.free(ctx),
        }
    }

    fn observe(&mut self, step: &StepInfo) {
        let run = self.run.as_mut().expect("a run");
        if run.untracked {
            return;
        }
        if run.at < run.order.len() {
            let i = run.order[run.at];
            let acc = one_access(&step.accesses);
            let e = &run.graph.evs[i];
            let same_object = matches!((acc, e.acc), (Ok(Some(x)), Some(y)) if x.obj == y.obj);
            if step.tid == e.tid && same_object && acc != Ok(e.acc) {
                // A revisit changed what it saw, and with it how it
                // touches its object (a compare-exchange that now fails
                // only reads).
                run.graph.evs[i].acc = acc.unwrap_or(None);
                let e = &run.graph.evs[i];
                self.last.push((e.tid, e.idx, e.alt, e.acc, true));
            } else if step.tid != e.tid || acc != Ok(e.acc) {
                // Recorded no further: a resume never goes past it.
                if std::env::var_os("TRUST_DEBUG").is_some() {
                    debug_divergence(&run.graph, i, step);
                }
                run.diverged = true;
            } else {
                self.last.push((e.tid, e.idx, e.alt, e.acc, true));
            }
            run.graph.evs[i].spawned = step.spawned.clone();
            run.at += 1;
            return;
        }
        let mut ev = run.pending.take().expect("a decided event");
        let Ok(acc) = one_access(&step.accesses) else {
            // Not placeable: the execution runs on, but nothing after this
            // step is explored (not exhausted). Each job still makes the
            // same children, whichever worker runs it.
            self.unsupported += 1;
            run.untracked = true;
            return;
        };
        ev.acc = acc;
        ev.spawned = step.spawned.clone();
        self.ran(&ev, true);
        self.add(ev);
    }

    fn end(&mut self, _outcome: &Outcome) {
        // Two blocked attempts on one object only wait: their order is no
        // part of the trace, so only the graph with them in stamp order
        // counts (the other is the same trace again).
        if let Some(run) = self.run.take() {
            let g = &run.graph;
            if g.before
                .iter()
                .any(|&(x, y)| x > y && g.evs[x].blocked && g.evs[y].blocked)
            {
                self.repeated += 1;
            }
        }
    }

    fn capabilities(&self) -> Option<&dyn Capabilities> {
        Some(self)
    }

    fn capabilities_mut(&mut self) -> Option<&mut dyn Capabilities> {
        Some(self)
    }
}

impl Capabilities for Trust {
    fn exhausted(&self) -> bool {
        // A job that could not replay took its subtree with it: no proof.
        self.started
            && (self.pool.is_none() || self.shared.done == Some(true))
            && self.jobs.is_empty()
            && self.run.is_none()
            && self.unsupported == 0
            && self.infeasible == 0
            && !self.full
    }

    fn stats(&self) -> Vec<Stat> {
        vec![
            Stat::new("wasted executions", self.wasted),
            Stat::new("infeasible jobs", self.infeasible),
            Stat::new("repeated traces", self.repeated),
            Stat::new(
                "steps over several objects (not explored past)",
                self.unsupported,
            ),
            Stat::new("jobs dropped by fair scheduling", self.unfair),
            Stat::peak("largest frontier (KiB)", self.peak_frontier >> 10),
        ]
    }

    /// Jobs dropped because fair scheduling hid the thread their order
    /// runs next: which schedules are fair depends on more than the
    /// trace (see `dpor`'s module documentation), so the search ended
    /// without covering every trace: a limit, not a proof.
    fn bound_hit(&self) -> Option<BoundHit> {
        if self.full {
            return Some(self.frontier_hit());
        }
        (self.unfair > 0).then_some(BoundHit {
            bound: "dropped jobs",
            value: self.unfair,
            knob: "--fairness-bound",
        })
    }

    fn splitting(&self) -> Option<&dyn Splitting> {
        Some(self)
    }

    fn splitting_mut(&mut self) -> Option<&mut dyn Splitting> {
        Some(self)
    }
}

impl Splitting for Trust {
    fn split(&self) -> Split {
        Split::Jobs
    }

    fn order_key(&self) -> Option<Vec<u32>> {
        Some(self.key.clone())
    }

    fn share(&mut self, pool: Arc<SubtreePool>) -> bool {
        self.pool = Some(pool);
        true
    }

    fn stretch(&self) -> u64 {
        self.shared.stretch
    }
}

#[cfg(test)]
mod tests;
