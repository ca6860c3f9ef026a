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
//! [`SubtreePool`], each job a
//! subtree whose payload is its graph, and the pool numbers the bug and
//! cuts the budget in key order: the report is one thread's, but for the
//! counters below when a bug or the budget cut the run (the threads ran
//! past it).
//!
//! **Partitions** (`--partition K/N`, `--split-depth`): a job's key depends
//! only on the job, so each partition keeps, of the jobs `--split-depth`
//! levels down, those whose key hashes to it (with all below them), and
//! runs every job above that depth to reach them, counting only its own:
//! each job runs in exactly one partition's count.
//!
//! **What it cannot prove, it says.** A step over several objects (a
//! condvar wait, the registry) is not placed: its execution runs on, but
//! nothing after it is explored, and the run is not exhausted. Under fair
//! scheduling a job whose order runs a hidden thread is dropped, a limit
//! reported as a bound (`--fairness-bound`), as `dpor`'s dropped
//! reversals are. Jobs hold graphs, whose order is quadratic in a
//! spinning execution's length: past `--frontier-mb` per worker the run
//! stops, not exhausted.

mod clock;
mod graph;
mod jobs;
mod objects;
mod placements;

use crate::explorer::partition::{Partition, Split};
use crate::explorer::steal::SubtreePool;
use crate::program::{StepInfo, ThreadView};
use crate::splitting::Splitting;
use crate::strategy::{BoundHit, Context, Outcome, Profile, Role, Standing, Start, Stat, Strategy};
use clock::Clocks;
use graph::{debug_divergence, one_access, Ev, Graph};
use jobs::{Job, Shared};
use objects::ByObject;
use std::collections::BTreeSet;
use std::sync::Arc;
use wasmrace_trace::{Access, Decision, OpKind, Tid};

/// The memory a worker's jobs may hold by default, in MiB (`--frontier-mb`).
pub const DEFAULT_FRONTIER_MB: u64 = 1024;

/// The default split depth of a partitioned run (`--partition`,
/// `--split-depth`), in job levels: every partition runs the few jobs
/// above it (tens on the fixtures), and deals out the many below.
pub const DEFAULT_SPLIT_LEVELS: usize = 3;

/// The most optional events (later writes a revisiting write sees, not
/// after the event it revisits) whose subsets are enumerated as
/// placements: 2^16 graphs for one revisit. Past it the revisit is left
/// out, counted, and the run is not exhausted: a limit, not a crash.
const MAX_OPTIONAL: usize = 16;

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

/// An event of the previous execution, in the order it ran, as a job that
/// shares it finds it again ([`Trust::resume`]).
#[derive(Clone, Copy, Debug)]
struct Ran {
    /// The thread that ran it.
    tid: Tid,
    /// Its index among its thread's events, 1-based ([`Ev::idx`]).
    idx: u32,
    /// The alternative it took ([`Ev::alt`]).
    alt: u32,
    /// The one object it touched, if any ([`Ev::acc`]).
    acc: Option<Access>,
    /// Whether it was a step; else a blocked attempt.
    step: bool,
}

impl Ran {
    /// Whether `e` is this event: the same thread, index, alternative and
    /// access (whether it blocks is settled when its job replays).
    fn is(&self, e: &Ev) -> bool {
        (self.tid, self.idx, self.alt, self.acc) == (e.tid, e.idx, e.alt, e.acc)
    }
}

/// Records that `e` ran (a step, or else a blocked attempt) in `last`:
/// a free function, for callers that hold a borrow of the run.
fn record(last: &mut Vec<Ran>, e: &Ev, step: bool) {
    last.push(Ran {
        tid: e.tid,
        idx: e.idx,
        alt: e.alt,
        acc: e.acc,
        step,
    });
}

/// The TruSt-style exploration; see the module documentation.
#[derive(Debug)]
pub struct Trust {
    /// Jobs to run, the next on top: their keys fall from bottom to top.
    jobs: Vec<Job>,
    /// The previous execution's events, to resume where a job shares them.
    last: Vec<Ran>,
    /// Which job runs next: the last made (0), or, to show that the jobs
    /// do not depend on one another, one picked by this seed's stream.
    shuffle: u64,
    run: Option<Run>,
    /// The vector clocks of the run's graph, kept as events are added.
    clocks: Clocks,
    /// The run's graph's events by object, kept as events are added.
    objects: ByObject,
    /// The key of the last job begun.
    key: Vec<u32>,
    started: bool,
    /// What the executions ran so far came to.
    counts: Counts,
    /// The most optional events a revisit's placements are enumerated for
    /// ([`MAX_OPTIONAL`]): one placement per subset of them.
    max_optional: usize,
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
    /// The partition whose share this worker runs (`--partition`), and
    /// the split depth in job levels.
    partition: Option<(Partition, usize)>,
    /// The job begun is another partition's: the counts as they were
    /// before it, put back at its end.
    foreign: Option<Counts>,
}

/// What [`Trust`]'s executions came to, besides running.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Runs that ended with a stopped thread able to go on.
    wasted: u64,
    /// Jobs whose replay found a thread where the graph said otherwise.
    infeasible: u64,
    /// Runs that repeated a trace (two blocked attempts out of stamp order).
    repeated: u64,
    /// Steps over several objects met (nothing after one is explored).
    unsupported: u64,
    /// Jobs dropped because fair scheduling hid the thread to replay.
    unfair: u64,
    /// New events with a revisit left out: more optional events than
    /// `max_optional` (the run is not exhausted).
    unplaced: u64,
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
            jobs: Vec::new(),
            last: Vec::new(),
            shuffle: 0,
            run: None,
            clocks: Clocks::default(),
            objects: ByObject::default(),
            key: Vec::new(),
            started: false,
            counts: Counts::default(),
            max_optional: MAX_OPTIONAL,
            frontier: 0,
            max_frontier: mb.saturating_mul(1 << 20),
            peak_frontier: 0,
            full: false,
            pool: None,
            shared: Shared::default(),
            partition: None,
            foreign: None,
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
        self.counts.wasted
    }

    /// Jobs whose replay found a thread where the graph said otherwise.
    pub fn infeasible(&self) -> u64 {
        self.counts.infeasible
    }

    /// Runs that repeated a trace (two blocked attempts out of stamp order).
    pub fn repeated(&self) -> u64 {
        self.counts.repeated
    }

    /// An event for thread `t`'s pending operation.
    fn pending_ev(graph: &Graph, t: &ThreadView, alt: u32, blocked: bool) -> Ev {
        Ev {
            tid: t.tid,
            op: t.pending.op,
            idx: graph.next_idx(t.tid),
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
        let conf = self.objects.conflicting(&run.graph, &ev);
        let (mut children, left_out) =
            (run.graph).placements(&ev, &conf, &self.clocks, self.max_optional);
        self.counts.unplaced += u64::from(left_out);
        if ev.alt == 0 && ev.acc.is_none() {
            for alt in 1..ev.alts {
                let n = run.graph.evs.len();
                let alt_ev = Ev { alt, ..ev.clone() };
                children.push(run.graph.with(&vec![false; n], alt_ev, &vec![true; n]));
            }
        }
        let at = run.graph.evs.len();
        run.graph.push(ev, &conf);
        self.clocks.push(&run.graph);
        self.objects.push(&run.graph);
        run.order.push(at);
        run.at = run.order.len();
        // Children explored after this run's own continuation: pushed in
        // reverse so that the first placement pops first. Their keys say
        // so: a later event's children come first, and among one event's,
        // the first placement.
        let parent = &run.key;
        let partition = self.partition;
        let jobs = children.into_iter().enumerate().filter_map(|(c, graph)| {
            let mut key = Vec::with_capacity(parent.len() + 2);
            key.extend_from_slice(parent);
            key.extend([u32::MAX - at as u32, c as u32]);
            // Below the split depth only this partition's subtrees.
            let elsewhere = partition
                .is_some_and(|(p, depth)| jobs::depth(&key) == depth && !jobs::owns(p, &key));
            (!elsewhere).then(|| Job::new(graph, key))
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
        self.counts.wasted += 1;
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
            let ran = self.last[k];
            if !ran.is(e) {
                break;
            }
            e.blocked = !ran.step;
            if ran.step {
                steps += 1;
            } else {
                run.stopped.insert(ran.tid);
            }
            k += 1;
        }
        // A resume point after a blocked attempt is the step count before it.
        self.last.truncate(k);
        run.at = k;
        steps
    }

    /// Counts the run that ended if it repeated a trace. Two blocked
    /// attempts on one object only wait: their order is no part of the
    /// trace, so only the graph with them in stamp order counts (the other
    /// is the same trace again).
    fn end_run(&mut self) {
        if let Some(run) = self.run.take() {
            let g = &run.graph;
            if g.pairs()
                .any(|(x, y)| x > y && g.evs[x].blocked && g.evs[y].blocked)
            {
                self.counts.repeated += 1;
            }
        }
    }

    fn ran(&mut self, e: &Ev, step: bool) {
        record(&mut self.last, e, step);
    }

    /// The replay's next decision, settling blocked attempts on the way.
    fn replay(&mut self, ctx: &Context<'_>) -> Option<Option<Decision>> {
        let run = self.run.as_mut().expect("a run");
        while run.at < run.order.len() {
            let i = run.order[run.at];
            let (tid, idx) = (run.graph.evs[i].tid, run.graph.evs[i].idx);
            let Some(at) = ctx.threads.iter().position(|t| t.tid == tid) else {
                self.counts.infeasible += 1;
                return Some(None);
            };
            if ctx.is_hidden(at) {
                // This order is not fair: a limit of the reduction under
                // fair scheduling, not a proof (see `bound_hit`).
                self.counts.unfair += 1;
                return Some(None);
            }
            let t = &ctx.threads[at];
            if t.pending.enabled {
                let e = &mut run.graph.evs[i];
                e.blocked = false;
                return Some(Some(Decision::new(e.tid, e.alt)));
            }
            // A blocked attempt: the prediction is all there is to compare
            // (and it must be its thread's last event).
            let last = !run.graph.evs.iter().any(|x| x.tid == tid && x.idx > idx);
            let e = &mut run.graph.evs[i];
            if !last || one_access(&t.pending.accesses) != Ok(e.acc) {
                if std::env::var_os("TRUST_DEBUG").is_some() {
                    eprintln!(
                        "blocked mismatch: last {last} graph {:?} / pending {:?}",
                        (e.tid, e.idx, e.op, e.acc),
                        t.pending
                    );
                }
                self.counts.infeasible += 1;
                return Some(None);
            }
            e.blocked = true;
            record(&mut self.last, e, false);
            run.stopped.insert(e.tid);
            run.at += 1;
        }
        None
    }
}

/// [`Trust::new`]: the default frontier, not none.
impl Default for Trust {
    fn default() -> Self {
        Self::new()
    }
}

impl Strategy for Trust {
    /// `dpor`, as for its other modes: the strategy the command line
    /// names (`--strategy dpor --dpor trust`), in reports, schedule files
    /// and refusals; the mode is in its options.
    fn name(&self) -> &str {
        "dpor"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.full {
            return None;
        }
        let Job { graph, key, .. } = self.next_job()?;
        self.key.clone_from(&key);
        // Above the split depth, every partition runs every job, and
        // counts its own.
        let foreign = self
            .partition
            .is_some_and(|(p, depth)| jobs::depth(&key) < depth && !jobs::owns(p, &key));
        self.foreign = foreign.then_some(self.counts);
        let order = graph.linearize();
        self.clocks.reset(&graph, &order);
        self.objects.reset(&graph);
        let mut run = Run {
            graph,
            order,
            key,
            ..Run::default()
        };
        let steps = self.resume(&mut run);
        self.run = Some(run);
        Some(match steps {
            0 => Start::Fresh,
            prefix_len => Start::Resume { prefix_len },
        })
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        if self.run.as_ref().is_some_and(|r| r.diverged) {
            self.counts.infeasible += 1;
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
                record(&mut self.last, e, true);
            } else if step.tid != e.tid || acc != Ok(e.acc) {
                // Recorded no further: a resume never goes past it.
                if std::env::var_os("TRUST_DEBUG").is_some() {
                    debug_divergence(&run.graph, i, step);
                }
                run.diverged = true;
            } else {
                record(&mut self.last, e, true);
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
            self.counts.unsupported += 1;
            run.untracked = true;
            return;
        };
        ev.acc = acc;
        ev.spawned = step.spawned.clone();
        self.ran(&ev, true);
        self.add(ev);
    }

    fn end(&mut self, _outcome: &Outcome) {
        self.end_run();
        if let Some(c) = self.foreign.take() {
            self.counts = c;
        }
    }

    /// By jobs: the threads of one process share them through a pool, and
    /// partitions each run their own (`jobs.rs`).
    fn profile(&self) -> Profile {
        Profile {
            split: Split::Jobs,
            ..Profile::default()
        }
    }

    /// Exhaustion, the bound and the counters, and the job's key, whether
    /// it is another partition's, and its stretch in a pool.
    fn standing(&self) -> Standing<'_> {
        Standing {
            exhausted: self.exhausted(),
            bound_hit: self.bound_hit(),
            stats: self.stats(),
            order_key: Some(self.key.clone()),
            foreign: self.foreign.is_some(),
            stretch: self.shared.stretch,
            ..Standing::default()
        }
    }

    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        Some(self)
    }
}

/// What [`Standing`] reads.
impl Trust {
    fn exhausted(&self) -> bool {
        // A job that could not replay took its subtree with it: no proof.
        self.started
            && (self.pool.is_none() || self.shared.done == Some(true))
            && self.jobs.is_empty()
            && self.run.is_none()
            && self.counts.unsupported == 0
            && self.counts.unplaced == 0
            && self.counts.infeasible == 0
            && !self.full
    }

    fn stats(&self) -> Vec<Stat> {
        vec![
            Stat::new("wasted executions", self.counts.wasted),
            Stat::new("infeasible jobs", self.counts.infeasible),
            Stat::new("repeated traces", self.counts.repeated),
            Stat::new(
                "steps over several objects (not explored past)",
                self.counts.unsupported,
            ),
            Stat::new("jobs dropped by fair scheduling", self.counts.unfair),
            Stat::new(
                "revisits left out (too many optional events)",
                self.counts.unplaced,
            ),
            Stat::peak("largest frontier (KiB)", self.peak_frontier >> 10),
        ]
    }

    /// The frontier's bound once it stopped the run; else, when jobs were
    /// dropped because fair scheduling hid the thread their order runs
    /// next (which schedules are fair depends on more than the trace, see
    /// `dpor`'s module documentation), that: the search ended without
    /// covering every trace, a limit, not a proof. Its value is 1, not
    /// the count: workers sharing a pool each count their own, so one
    /// worker's count would depend on the timing (the counters, summed,
    /// say how many).
    fn bound_hit(&self) -> Option<BoundHit> {
        if self.full {
            return Some(self.frontier_hit());
        }
        (self.counts.unfair > 0).then_some(BoundHit {
            bound: "dropped jobs",
            value: 1,
            knob: "--fairness-bound",
        })
    }
}

/// A pool shared with other workers, or a partition's jobs.
impl Splitting for Trust {
    /// A split depth of 0 levels is 1: the root is no partition's alone.
    fn take_role(&mut self, role: Role) -> bool {
        match role {
            Role::Shared(pool) => self.pool = Some(pool),
            Role::Partition(partition, depth) => {
                self.partition = Some((partition, depth.max(1)));
            }
            Role::Rounds(_) | Role::Phase(_) => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests;
