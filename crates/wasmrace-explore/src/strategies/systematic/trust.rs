//! A TruSt-style exhaustive exploration (Kokologiannakis, Marmanis,
//! Gladstein and Vafeiadis, "Truly stateless, optimal dynamic partial
//! order reduction", POPL 2022) transcribed to Mazurkiewicz traces over
//! steps that touch one object each: every execution computes its
//! alternatives (child jobs) from itself alone, with no wakeup tree and no
//! sleep set, so that jobs could run on any thread or machine. Research
//! prototype of `docs/design/trust-mazurkiewicz.md` (the model it follows
//! is `docs/design/pop-proto/trustcf.py`); not registered.
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

use crate::explorer::partition::Split;
use crate::program::{StepInfo, ThreadView};
use crate::splitting::Splitting;
use crate::strategy::{Capabilities, Context, Outcome, Start, Stat, Strategy};
use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};
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
        Graph {
            evs,
            before,
            into,
            prev,
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

    /// The events causally after `b` (inclusive).
    fn future(&self, b: usize) -> Vec<bool> {
        let n = self.evs.len();
        let mut after = vec![false; n];
        after[b] = true;
        // Stamps need not follow the order: sweep until nothing changes.
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if !after[i] && self.preds(i).any(|p| after[p]) {
                    after[i] = true;
                    changed = true;
                }
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
        let ev = &self.evs[e];
        ev.alt == 0 && (0..e).all(|c| !self.evs[c].conflicts(ev) || self.before.contains(&(c, e)))
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
            let after_b = self.future(b);
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

/// The jobs of one exploration shared by the threads running it: any
/// thread takes any job (they depend on nothing but themselves) and puts
/// its children back; the exploration ends when no job is left and no
/// thread is running one.
#[derive(Debug)]
pub struct JobQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
}

#[derive(Debug)]
struct QueueState {
    jobs: Vec<Graph>,
    /// Threads with work: a job running or jobs of their own to run.
    busy: usize,
    /// Threads waiting for a job.
    waiting: usize,
    stopped: bool,
}

impl JobQueue {
    /// A queue holding the root job (the empty graph).
    pub fn new() -> Arc<JobQueue> {
        Arc::new(JobQueue {
            state: Mutex::new(QueueState {
                jobs: vec![Graph::default()],
                busy: 0,
                waiting: 0,
                stopped: false,
            }),
            ready: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the exploration for every thread (one stopped or failed).
    pub fn stop(&self) {
        self.lock().stopped = true;
        self.ready.notify_all();
    }

    /// The next job for a thread that ran out of its own (`was_busy`: it
    /// had some), waiting while others may still make some; `None` once
    /// the exploration is over.
    fn take(&self, was_busy: bool) -> Option<Graph> {
        let mut st = self.lock();
        if was_busy {
            st.busy -= 1;
        }
        st.waiting += 1;
        let job = loop {
            if st.stopped {
                break None;
            }
            if let Some(job) = st.jobs.pop() {
                st.busy += 1;
                break Some(job);
            }
            if st.busy == 0 {
                break None;
            }
            st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        };
        st.waiting -= 1;
        if job.is_none() {
            self.ready.notify_all();
        }
        job
    }

    /// Whether a thread waits for a job and none is left to take.
    fn hungry(&self) -> bool {
        let st = self.lock();
        st.waiting > 0 && st.jobs.is_empty()
    }

    /// Hands jobs over to the waiting threads.
    fn give(&self, jobs: Vec<Graph>) {
        self.lock().jobs.extend(jobs);
        self.ready.notify_all();
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
}

/// An event of the previous execution, in the order it ran: who, which,
/// and whether it was a step (else a blocked attempt).
type Ran = (Tid, u32, u32, Option<Access>, bool);

/// The TruSt-style exploration; see the module documentation.
#[derive(Debug, Default)]
pub struct Trust {
    jobs: Vec<Graph>,
    /// The previous execution's events, to resume where a job shares them.
    last: Vec<Ran>,
    /// Which job runs next: the last made (0), or, to show that the jobs
    /// do not depend on one another, one picked by this seed's stream.
    shuffle: u64,
    run: Option<Run>,
    started: bool,
    executions: u64,
    wasted: u64,
    infeasible: u64,
    repeated: u64,
    /// Steps over several objects met (the run stops at the first).
    unsupported: u64,
    /// The queue shared with other threads (`check --jobs`), if any.
    queue: Option<Arc<JobQueue>>,
    /// Whether this thread holds work the queue counts (shared mode).
    busy: bool,
    /// The queue said the exploration is over.
    drained: bool,
}

impl Trust {
    /// A new exploration.
    pub fn new() -> Self {
        Self::default()
    }

    /// An exploration that takes its jobs in an order drawn from `seed`
    /// (not the last made first): the same executions, in another order.
    pub fn shuffled(seed: u64) -> Self {
        Trust {
            shuffle: seed | 1,
            ..Self::default()
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
        // reverse so that the first placement pops first.
        self.jobs.extend(children.into_iter().rev());
    }

    /// The free run's choice: the thread of least `Tid` that can go on.
    fn free(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let mut threads: Vec<&ThreadView> = ctx.threads.iter().collect();
        threads.sort_by_key(|t| t.tid);
        for t in threads {
            let run = self.run.as_ref().expect("a run");
            if run.stopped.contains(&t.tid) {
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
            let Some(t) = ctx.thread(e.tid) else {
                self.infeasible += 1;
                return Some(None);
            };
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
        let graph = if let Some(q) = self.queue.clone().filter(|_| self.jobs.is_empty()) {
            // Out of jobs of its own: one from the queue.
            self.started = true;
            let job = q.take(self.busy);
            self.busy = job.is_some();
            match job {
                Some(g) => g,
                None => {
                    self.drained = true;
                    return None;
                }
            }
        } else if self.started || self.queue.is_some() {
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
            self.jobs.swap_remove(at)
        } else {
            self.started = true;
            Graph::default()
        };
        let order = graph.linearize();
        let mut run = Run {
            graph,
            order,
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
        match self.replay(ctx) {
            Some(d) => d,
            None => self.free(ctx),
        }
    }

    fn observe(&mut self, step: &StepInfo) {
        let run = self.run.as_mut().expect("a run");
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
            // Not placeable: the exploration stops here, not exhausted.
            self.unsupported += 1;
            self.jobs.clear();
            if let Some(q) = &self.queue {
                q.stop();
            }
            run.diverged = true;
            return;
        };
        ev.acc = acc;
        ev.spawned = step.spawned.clone();
        self.ran(&ev, true);
        self.add(ev);
    }

    fn end(&mut self, _outcome: &Outcome) {
        // A thread waits: hand it the older half of this one's jobs (the
        // bottom of the stack, the largest subtrees).
        if let Some(q) = &self.queue {
            if self.jobs.len() > 1 && q.hungry() {
                let half = self.jobs.len() / 2;
                q.give(self.jobs.drain(..half).collect());
            }
        }
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
            && (self.queue.is_none() || self.drained)
            && self.jobs.is_empty()
            && self.run.is_none()
            && self.unsupported == 0
            && self.infeasible == 0
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
        ]
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

    fn share_jobs(&mut self, queue: Arc<JobQueue>) -> bool {
        self.queue = Some(queue);
        true
    }
}

#[cfg(test)]
mod tests;
