//! Dynamic partial-order reduction: exhaustive search that runs each
//! Mazurkiewicz trace (equivalence class of interleavings under the
//! dependency relation of `race`) once. Abdulla, Aronis, Jonsson &
//! Sagonas, "Optimal dynamic partial order reduction" (POPL 2014) and
//! "Source sets: a foundation for optimal dynamic partial order reduction"
//! (JACM 2017): Algorithm 1 (`--dpor source`: source sets and sleep sets)
//! and Algorithm 2 (`--dpor optimal`, the default: wakeup trees).
//!
//! **The search.** One `Node` per depth of the current path holds what
//! the algorithms keep per prefix `E`: `sleep(E)` (threads whose next event
//! was explored here or in an equivalent way, with that event) and `wut(E)`
//! (the wakeup tree of sequences still to explore; in source mode, a flat
//! backtrack set). A new node takes the subtree of the sequence its parent
//! follows, and the parent's sleepers whose next event commutes with the
//! step taken; with nothing to follow it runs any enabled thread that is
//! not asleep (the last one first, as DFS, unless it yielded). When an
//! execution ends, every race `e ⋖ e'` it contains, with `e'` new in this
//! execution, is reversed: `v = notdep(e, E).e'` goes into the wakeup tree
//! at the state before `e` unless a sleeping thread is a weak initial of
//! `v` (optimal), or one initial of `v` into its backtrack set unless one
//! already is there (source). The next execution resumes at the deepest
//! node with something left, through `Start::Resume`. The vector clocks
//! that find the races are kept per depth of the path (`race::Clocks`):
//! an execution computes them only from its first new event, so a step
//! costs the same however deep the shared prefix is.
//!
//! **Branches that are not reduced.** A step with alternatives (`choose`'s
//! values, which waiter `notify_one` wakes) reaches every alternative.
//! Optimal mode treats each alternative as an event of its own, dependent
//! with the others: when one runs, the others are reversals planned at
//! the same node under the rules of any reversal (dropped when a sleeper
//! is a weak initial, merged into a planned sequence that runs them), and
//! a thread sleeps per alternative. Source mode runs every alternative at
//! the node where its thread runs; the thread sleeps there only once all
//! are done.
//!
//! **Blocking.** A blocked thread is not enabled and has no event; the
//! race rules in `race` reverse lock acquisitions against each other and
//! never reverse an event with the one it enabled. A planned sequence whose
//! next thread turns out blocked is dropped (counted as an infeasible
//! reversal; the execution is abandoned when nothing else is left at that
//! node).
//!
//! **Fairness.** Fair scheduling (`explorer::fairness`, on by default)
//! hides a thread that spun past its yield bound from every strategy's
//! enabled set. Which schedules are fair depends on the order of
//! independent steps, not only on the trace, so the fair schedules are not
//! closed under Mazurkiewicz equivalence: a reversal may have no fair
//! schedule as planned while another schedule of the same trace is fair.
//! DPOR under fairness is therefore *not* complete for fair traces (on
//! random programs with waiting loops it covers half of those unbounded
//! DFS under the same fairness covers: `dpor/tests.rs`). Every such loss
//! goes through a planned sequence whose thread was hidden, so a run that
//! dropped one reports it as a bound that pruned the space
//! ([`Standing::bound_hit`]: `--fairness-bound`), not as a proof; the
//! portfolio then goes on to its other members. Unbounded DFS covers every
//! fair schedule.
//!
//! **Bounded** (`--preemption-bound N`): bounded partial-order reduction
//! in source mode, with conservative backtrack points and sleep sets only
//! where the bound pruned nothing; see `bound`.
//!
//! **Memory.** Nodes exist for the current path only: sleep sets hold at
//! most one event per thread, and wakeup trees hold the reversals planned
//! from their state, dropped with the node.

mod bound;
pub(crate) mod mode;
mod race;
pub mod trust;
mod wakeup;

use crate::program::{StepInfo, ThreadView};
use crate::strategies::descriptor::{Descriptor, Knob, Refusal, StrategyOptions, Takes};
use crate::strategy::{BoundHit, Context, Outcome, Standing, Start, Stat, Strategy};
pub use mode::DporMode;
use race::{dependent, Ev};
use wakeup::{initials, is_weak_initial, WakeupTree};
use wasmrace_trace::{Decision, OpKind, Tid};

/// Whether the options given ask for a preemption bound.
fn bounded(o: &StrategyOptions) -> bool {
    matches!(o.preemption_bound, Some(Some(_)))
}

/// `dpor` in the [registry](crate::strategies::registry): `--dpor`
/// (default `optimal`) and `--preemption-bound` (default unbounded). With a
/// bound it runs bounded source-DPOR whatever `--dpor` says (it refuses
/// `--dpor optimal` with a bound); see `bound`.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "dpor",
    about: "Dynamic partial-order reduction: each Mazurkiewicz trace once \
            (optimal DPOR with wakeup trees or source sets; Abdulla et al., POPL 2014)",
    takes: &[
        Takes::always(Knob::Dpor),
        Takes::always(Knob::PreemptionBound),
        // Used by `--dpor trust` only: the other modes hold one path.
        Takes::always(Knob::FrontierMb),
    ],
    always: &[],
    defaults: StrategyOptions {
        dpor: Some(DporMode::Optimal),
        preemption_bound: Some(None),
        frontier_mb: Some(trust::DEFAULT_FRONTIER_MB),
        ..StrategyOptions::NONE
    },
    refuses: &[
        // Optimal DPOR's wakeup trees are not known to keep a schedule of
        // every trace within a bound: an explicit `--dpor optimal` with a
        // bound is refused rather than changed silently to source.
        Refusal {
            knob: Knob::Dpor,
            when: |o| bounded(o) && o.dpor == Some(DporMode::Optimal),
            message: "`--dpor optimal` does not take `--preemption-bound`: bounded dpor \
                      runs source-DPOR; use `--dpor source` or leave `--dpor` out",
        },
        // The other modes hold one path, not a frontier of jobs.
        Refusal {
            knob: Knob::FrontierMb,
            when: |o| o.frontier_mb.is_some() && (bounded(o) || o.dpor != Some(DporMode::Trust)),
            message: "`--frontier-mb` only applies to `--dpor trust` (unbounded)",
        },
    ],
    build: |o, _| match (preemption_bound(o), mode(o)) {
        (Some(n), _) => Box::new(Dpor::bounded(n)),
        (None, DporMode::Trust) => Box::new(trust::Trust::with_frontier_mb(
            o.frontier_mb.unwrap_or(trust::DEFAULT_FRONTIER_MB),
        )),
        (None, m) => Box::new(Dpor::new(m)),
    },
    describe: |o, _| match preemption_bound(o) {
        Some(n) => format!("dpor, source (bounded), preemption bound {n}"),
        None => format!("dpor, {}, unbounded", mode(o).name()),
    },
    options_json: |o| {
        let mut json = serde_json::Map::new();
        match preemption_bound(o) {
            Some(n) => {
                json.insert("dpor".into(), DporMode::Source.name().into());
                json.insert("preemption_bound".into(), n.into());
            }
            None => {
                json.insert("dpor".into(), mode(o).name().into());
            }
        }
        json
    },
};

fn mode(o: &StrategyOptions) -> DporMode {
    o.dpor.unwrap_or_default()
}

/// The preemption bound of resolved options (unbounded when unset).
fn preemption_bound(o: &StrategyOptions) -> Option<u32> {
    o.preemption_bound.flatten()
}

/// The sets a [`Dpor`] keeps per node: the modes it runs itself
/// ([`DporMode::Trust`] is [`trust::Trust`], which the descriptor builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sets {
    /// Wakeup trees (`--dpor optimal`).
    Optimal,
    /// Source sets (`--dpor source`).
    Source,
}

/// The search state at one depth of the current path.
#[derive(Debug, Default)]
struct Node {
    /// `sleep(E)`: sleeping threads with their next event.
    sleep: Vec<Ev>,
    /// `wut(E)` without the child being explored (source mode: the
    /// backtrack set, single events).
    wut: WakeupTree,
    /// The decision on the current path.
    chosen: Option<Decision>,
    /// Its thread's next event as predicted before it ran (what it sleeps
    /// with once explored).
    pending: Option<Ev>,
    /// The subtree the child follows, until the child node takes it.
    child_wut: WakeupTree,
    /// Alternatives of the chosen thread still to run, with their subtrees.
    alts: Vec<(u32, WakeupTree)>,
    /// Threads explored here (source mode's backtrack check).
    explored: Vec<Tid>,
    /// The threads blocked in the program at this node's state (not those
    /// fair scheduling hides): what makes a notification and the wake-up it
    /// causes irreversible (`race`).
    blocked: Vec<Tid>,
}

impl Node {
    /// Empties the node, keeping its buffers.
    fn clear(&mut self) {
        self.sleep.clear();
        self.wut = WakeupTree::default();
        self.chosen = None;
        self.pending = None;
        self.child_wut = WakeupTree::default();
        self.alts.clear();
        self.explored.clear();
        self.blocked.clear();
    }
}

/// The nodes of the current path, kept where they stand: a node popped off
/// the path is emptied in place (keeping its buffers) and the next push
/// takes it again, so that a step moves no `Node`. Popping nodes into a
/// spare list and pushing them back copied each one twice per step, and a
/// `Node` is a few hundred bytes.
#[derive(Debug, Default)]
struct Path {
    nodes: Vec<Node>,
    /// How many of `nodes` are on the path; the rest are empty.
    len: usize,
}

impl Path {
    /// Empties the nodes from `len` on.
    fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.nodes[len..self.len].iter_mut().for_each(Node::clear);
            self.len = len;
        }
    }

    /// Adds an empty node at the end of the path.
    fn push(&mut self) {
        if self.len == self.nodes.len() {
            self.nodes.push(Node::default());
        }
        self.len += 1;
    }
}

impl std::ops::Deref for Path {
    type Target = [Node];
    fn deref(&self) -> &[Node] {
        &self.nodes[..self.len]
    }
}

impl std::ops::DerefMut for Path {
    fn deref_mut(&mut self) -> &mut [Node] {
        &mut self.nodes[..self.len]
    }
}

/// Dynamic partial-order reduction; see the module documentation.
#[derive(Debug)]
pub struct Dpor {
    mode: Sets,
    started: bool,
    exhausted: bool,
    nodes: Path,
    /// Events of the current execution, `events[i]` taken from `nodes[i]`.
    events: Vec<Ev>,
    /// Events before this index were checked for races already.
    checked: usize,
    /// Happens-before of `events`, kept across executions for the prefix
    /// they share.
    clocks: race::Clocks,
    /// The node the next `decide` resumes, if any.
    resume: Option<usize>,
    executions: u64,
    traces: u64,
    sleep_blocked: u64,
    infeasible: u64,
    max_wut: usize,
    /// The preemption bound, when bounded.
    bound: Option<bound::Bound>,
    /// Scratch: the reversal of the race being reversed, as indices.
    reversal: Vec<usize>,
}

impl Dpor {
    /// DPOR with `mode`, optimal or source; `DporMode::Trust` is
    /// [`Trust`](trust::Trust), and refused here at once rather
    /// than midway through a run.
    pub fn new(mode: DporMode) -> Self {
        let mode = match mode {
            DporMode::Optimal => Sets::Optimal,
            DporMode::Source => Sets::Source,
            DporMode::Trust => panic!("`DporMode::Trust` is its own strategy: build `Trust`"),
        };
        Dpor {
            mode,
            started: false,
            exhausted: false,
            nodes: Path::default(),
            events: Vec::new(),
            checked: 0,
            clocks: race::Clocks::default(),
            resume: None,
            executions: 0,
            traces: 0,
            sleep_blocked: 0,
            infeasible: 0,
            max_wut: 0,
            bound: None,
            reversal: Vec::new(),
        }
    }

    /// Bounded source-DPOR: at least one schedule of every trace that has
    /// a schedule with at most `limit` preemptions (see `bound`).
    pub fn bounded(limit: u32) -> Self {
        Dpor {
            bound: Some(bound::Bound::new(limit)),
            ..Self::new(DporMode::Source)
        }
    }

    /// Race reversals the preemption bound refused (0 when unbounded).
    pub fn pruned(&self) -> u64 {
        self.bound.as_ref().map_or(0, bound::Bound::pruned)
    }

    /// Optimal DPOR.
    pub fn optimal() -> Self {
        Self::new(DporMode::Optimal)
    }

    /// Source-DPOR.
    pub fn source() -> Self {
        Self::new(DporMode::Source)
    }

    /// Executions that ended with every enabled thread asleep (always 0 in
    /// optimal mode).
    pub fn sleep_blocked(&self) -> u64 {
        self.sleep_blocked
    }

    /// Executions that ran to their end (finished or failed): distinct
    /// traces.
    pub fn traces(&self) -> u64 {
        self.traces
    }

    /// Planned sequences dropped because their next thread was blocked.
    pub fn infeasible(&self) -> u64 {
        self.infeasible
    }

    /// The predicted next event of a thread.
    fn predicted(view: &ThreadView, alt: u32) -> Ev {
        Ev::new(view.tid, alt, Some(view.pending.op), &view.pending.accesses)
    }

    /// Sets `node` to run `(next.tid, next.alt)` next, following `sub`,
    /// and plans the thread's other alternatives. `next` is the thread's
    /// event as predicted from `view` (what it sleeps with once explored),
    /// made once by the caller: a free choice has made it already.
    ///
    /// Source mode queues every other alternative (with the subtrees
    /// planned for them, if any) to run right after this one; the thread
    /// sleeps only once all are done. Optimal mode treats each alternative
    /// as an event of its own that conflicts with the others (a thread
    /// sleeps per alternative): another alternative is the reversal `[alt]`
    /// of its race with the one taken, inserted into the wakeup tree as
    /// any reversal is, so that it is dropped when a sleeping thread is a
    /// weak initial of it (any sleeper, for `choose`, which touches
    /// nothing) and joins a planned sequence that already runs it. Queuing
    /// it regardless ran sleep-set-blocked executions: on
    /// `two_phase_commit` a participant still to receive `prepare` slept
    /// while another's vote was chosen, and a sequence that planned one
    /// vote ran after the participant slept with the other.
    fn take(node: &mut Node, view: &ThreadView, next: Ev, sub: WakeupTree, mode: Sets) -> Decision {
        let others = (0..view.pending.alts).filter(|&a| a != next.alt);
        match mode {
            Sets::Optimal => {
                for a in others {
                    let ev = Self::predicted(view, a);
                    let alt = [&ev];
                    if !node.sleep.iter().any(|s| is_weak_initial(s, &alt, false)) {
                        node.wut.insert(&alt);
                    }
                }
            }
            Sets::Source => {
                let mut planned = node.wut.take_thread(&next);
                node.alts = others
                    .map(|a| match planned.iter().position(|(e, _)| e.alt == a) {
                        Some(i) => (a, planned.swap_remove(i).1),
                        None => (a, WakeupTree::default()),
                    })
                    .collect();
            }
        }
        node.child_wut = sub;
        let d = Decision::new(next.tid, next.alt);
        node.pending = Some(next);
        node.chosen = Some(d);
        d
    }

    /// Whether alternative `alt` of `tid` sleeps at `node` (source mode: any
    /// alternative of `tid`, see [`take`](Self::take)).
    fn asleep(node: &Node, tid: Tid, alt: u32, mode: Sets) -> bool {
        node.sleep
            .iter()
            .any(|s| s.tid == tid && (mode == Sets::Source || s.alt == alt))
    }

    /// The next planned sequence at `node` that can run, dropping those
    /// whose thread is blocked or asleep.
    fn planned(&mut self, node: usize, ctx: &Context<'_>) -> Option<Decision> {
        let n = &mut self.nodes[node];
        while let Some((ev, sub)) = n.wut.pop_first() {
            let view = ctx
                .thread(ev.tid)
                .filter(|v| v.pending.enabled && ev.alt < v.pending.alts);
            let Some(view) = view else {
                self.infeasible += 1;
                continue;
            };
            if Self::asleep(n, ev.tid, ev.alt, self.mode) {
                continue;
            }
            let next = Self::predicted(view, ev.alt);
            return Some(Self::take(n, view, next, sub, self.mode));
        }
        None
    }

    /// Any enabled thread not asleep (its first alternative that is not),
    /// the last one first unless it yielded; `None` when all are asleep.
    fn free_choice(node: &mut Node, ctx: &Context<'_>, mode: Sets) -> Option<Decision> {
        let last = ctx.last.map(|(t, _)| t);
        let yielded = matches!(ctx.last, Some((_, Some(OpKind::Yield))));
        let awake = |v: &ThreadView| {
            let alts = if v.pending.enabled { v.pending.alts } else { 0 };
            (0..alts).find(|&a| !Self::asleep(node, v.tid, a, mode))
        };
        // The first of the most preferred (`min_by_key` keeps the first).
        let (view, alt) = ctx
            .threads
            .iter()
            .filter_map(|v| Some((v, awake(v)?)))
            .min_by_key(|(v, _)| match (Some(v.tid) == last, yielded) {
                (true, false) => 0,
                (false, _) => 1,
                (true, true) => 2,
            })?;
        let next = Self::predicted(view, alt);
        Some(Self::take(node, view, next, WakeupTree::default(), mode))
    }

    /// Reverses the races of the execution that just ended.
    fn reverse_races(&mut self) {
        // One buffer each for all the races (a `Vec` per race was an
        // allocation each).
        let mut indices = std::mem::take(&mut self.reversal);
        let mut v: Vec<&Ev> = Vec::new();
        for r in self.clocks.races(&self.events, self.checked) {
            self.clocks.reversal(&r, &mut indices);
            v.clear();
            v.extend(indices.iter().map(|&i| &self.events[i]));
            if let Some(b) = &mut self.bound {
                let size = b.reverse(&mut self.nodes, &self.events, r.at, &v);
                self.max_wut = self.max_wut.max(size);
                continue;
            }
            let node = &mut self.nodes[r.at];
            match self.mode {
                Sets::Optimal => {
                    let asleep = node.sleep.iter().any(|s| is_weak_initial(s, &v, false));
                    if !asleep {
                        node.wut.insert(&v);
                    }
                }
                Sets::Source => Self::add_backtrack(node, &v),
            }
            self.max_wut = self.max_wut.max(self.nodes[r.at].wut.size());
        }
        self.reversal = indices;
        self.checked = self.events.len();
    }

    /// Source-DPOR: unless an initial of `v` is in `backtrack(E)` already,
    /// add one (one that is awake, if any is).
    fn add_backtrack(node: &mut Node, v: &[&Ev]) {
        let inits = initials(v);
        let current = node.chosen.map(|d| d.tid);
        let present = |t| {
            Some(t) == current
                || node.explored.contains(&t)
                || node.wut.first_threads().any(|e| e.tid == t)
        };
        if inits.iter().any(|e| present(e.tid)) {
            return;
        }
        let awake = inits
            .iter()
            .find(|e| !node.sleep.iter().any(|s| s.tid == e.tid));
        if let Some(e) = awake {
            node.wut.push((*e).clone());
        }
    }

    /// Marks the chosen child of `node` as explored: its thread sleeps.
    fn finish_child(node: &mut Node) {
        if let (Some(p), Some(d)) = (node.pending.take(), node.chosen) {
            node.explored.push(d.tid);
            node.sleep.push(p);
        }
    }
}

impl Strategy for Dpor {
    fn name(&self) -> &str {
        "dpor"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.exhausted {
            return None;
        }
        self.resume = None;
        if !self.started {
            self.started = true;
            self.checked = 0;
            return Some(Start::Fresh);
        }
        while let Some(depth) = self.nodes.len().checked_sub(1) {
            let node = &mut self.nodes[depth];
            if node.alts.is_empty() {
                let slept = node.sleep.len();
                Self::finish_child(node);
                // Bounded: the thread sleeps only if its subtree pruned
                // nothing (see `bound`).
                if self.bound.as_mut().is_some_and(|b| !b.child_done(depth)) {
                    node.sleep.truncate(slept);
                }
            }
            if !node.alts.is_empty() || !node.wut.is_empty() {
                self.events.truncate(depth);
                self.checked = depth;
                self.resume = Some(depth);
                return Some(Start::Resume { prefix_len: depth });
            }
            self.nodes.truncate(depth);
        }
        self.exhausted = true;
        None
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let depth = ctx.step;
        if self.resume.take() == Some(depth) {
            let node = &mut self.nodes[depth];
            if let Some((alt, sub)) = (!node.alts.is_empty()).then(|| node.alts.remove(0)) {
                let d = node.chosen?;
                node.child_wut = sub;
                let d = Decision::new(d.tid, alt);
                node.chosen = Some(d);
                return Some(d);
            }
            return self.planned(depth, ctx);
        }
        // A new node, below the one the last step was taken from.
        self.nodes.truncate(depth);
        if depth > self.events.len() {
            return None;
        }
        self.nodes.push();
        if let Some(p) = depth.checked_sub(1) {
            let (above, below) = self.nodes.split_at_mut(depth);
            let (parent, node, e) = (&mut above[p], &mut below[0], &self.events[p]);
            let awake = parent.sleep.iter().filter(|s| !dependent(s, e));
            node.sleep.extend(awake.cloned());
            node.wut = std::mem::take(&mut parent.child_wut);
        }
        blocked(ctx, &mut self.nodes[depth].blocked);
        if let Some(b) = &mut self.bound {
            b.enter(depth, ctx);
        }
        if let Some(d) = self.planned(depth, ctx) {
            return Some(d);
        }
        let d = Self::free_choice(&mut self.nodes[depth], ctx, self.mode);
        // Bounded: the last thread asleep, a switch the bound cannot afford.
        let afford = match (&mut self.bound, d) {
            (Some(b), Some(c)) => b.afford(depth, c.tid),
            _ => true,
        };
        if d.is_none() || !afford {
            self.sleep_blocked += u64::from(d.is_none());
            self.nodes.truncate(depth);
            return None;
        }
        d
    }

    fn observe(&mut self, step: &StepInfo) {
        let mut ev = Ev::new(step.tid, step.alt, step.op, &step.accesses);
        ev.spawned = step.spawned.clone();
        ev.message = step.message;
        // Only a notification's race needs them (`race::reversible`).
        if step.op == Some(OpKind::MemNotify) {
            if let Some(n) = self.nodes.get(self.events.len()) {
                ev.blocked.clone_from(&n.blocked);
            }
        }
        self.events.push(ev);
    }

    fn end(&mut self, outcome: &Outcome) {
        self.executions += 1;
        if !matches!(outcome, Outcome::Abandoned) {
            self.traces += 1;
        }
        // The explorer may stop between a decision and its step.
        self.nodes.truncate(self.events.len().max(1));
        self.reverse_races();
    }

    /// Exhaustion, the bound and the counters of the search.
    fn standing(&self) -> Standing<'_> {
        Standing {
            exhausted: self.exhausted,
            bound_hit: self.bound_hit(),
            stats: self.stats(),
            ..Standing::default()
        }
    }
}

/// The threads `ctx` shows blocked that fair scheduling does not hide,
/// into `out` (emptied first), as [`Node::blocked`] keeps them.
fn blocked(ctx: &Context<'_>, out: &mut Vec<Tid>) {
    out.clear();
    for (i, t) in ctx.threads.iter().enumerate() {
        if !t.pending.enabled && !ctx.is_hidden(i) {
            out.push(t.tid);
        }
    }
}

/// What [`Standing`] reads.
impl Dpor {
    /// Planned sequences dropped because their thread was not enabled
    /// (fairness hid it; see the module documentation): the search ended
    /// without covering every trace, a bound rather than a proof.
    fn stats(&self) -> Vec<Stat> {
        let mut stats = vec![
            // Without sleep sets (bounded), a trace can run twice.
            Stat::new(
                match self.bound {
                    None => "traces",
                    Some(_) => "complete executions",
                },
                self.traces,
            ),
            Stat::new("sleep-set-blocked executions", self.sleep_blocked),
            Stat::new("infeasible reversals", self.infeasible),
            Stat::peak("largest wakeup tree", self.max_wut as u64),
        ];
        if let Some(b) = &self.bound {
            stats.push(Stat::new("reversals pruned by the bound", b.pruned()));
            stats.push(Stat::new("conservative backtrack points", b.conservative()));
        }
        stats
    }

    /// The bound that pruned the space, if one did: the preemption bound
    /// (bounded mode), else planned sequences dropped because their thread
    /// was not enabled (fairness hid it; see the module documentation).
    /// Either way the search ended without covering every trace: a bound,
    /// not a proof.
    fn bound_hit(&self) -> Option<BoundHit> {
        let preemptions = self.bound.as_ref().filter(|b| b.pruned() > 0);
        if let Some(b) = preemptions {
            return Some(BoundHit {
                bound: "preemptions",
                value: u64::from(b.limit()),
                knob: "--preemption-bound",
            });
        }
        (self.infeasible > 0).then_some(BoundHit {
            bound: "dropped reversals",
            value: self.infeasible,
            knob: "--fairness-bound",
        })
    }
}

#[cfg(test)]
pub(crate) mod tests;
