//! The exploration loop: runs a strategy against a program, one execution
//! after another, within explicit bounds; resumes executions from held
//! snapshots or by replaying a prefix; starts them from states saved at the
//! strategy's request; hashes states for strategies that cache them; stops
//! at the first bug (by default).

use crate::prefix_tree::{NodeId, PrefixTree, NIL};
use crate::program::{Program, Status};
use crate::strategy::{BoundHit, Context, Outcome, Start, Stat, Strategy};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use wasmrace_trace::{Decision, Failure, FailureKind, OpKind, Tid};

/// Every bound of an exploration. Hitting one is reported with the name of
/// the knob that raises it.
#[derive(Clone, Debug)]
pub struct Config {
    /// Executions to run at most (`--max-executions`). Default 100,000.
    pub max_executions: u64,
    /// Steps per execution at most (`--max-steps`); an execution that takes
    /// more fails as a possible livelock. Default 10,000.
    pub max_steps: u64,
    /// Wall-clock budget for the whole exploration (`--time-budget`). Only
    /// checked between executions; a run cut by time is not reproducible in
    /// length, which the report says. Default: none.
    pub time_budget: Option<Duration>,
    /// Snapshot policy: take a snapshot after a step once this much cost
    /// (instructions for wasm) has accumulated since the previous one on the
    /// current path. `Some(0)` snapshots after every step, `None` never;
    /// without a snapshot, a resumed execution is replayed from the start.
    /// Default `Some(200_000)`: cheaper to replay than to copy below that.
    pub snapshot_every_cost: Option<u64>,
    /// Snapshots held at most along the current path (oldest beyond that are
    /// dropped). Default 64.
    pub max_snapshots: usize,
    /// Stop at the first failing execution. Default true.
    pub stop_on_first_bug: bool,
    /// Saved states (`Strategy::save_request`, e.g. SES's frontier) held
    /// as snapshots at most (`--max-saved-snapshots`); beyond that a saved
    /// state keeps only its prefix and is replayed when started from, which
    /// is slower, never wrong. Default 65,536.
    pub max_saved_snapshots: usize,
    /// Bytes of saved snapshots held at most (`--saved-snapshots-mb`, as
    /// `Program::snapshot_bytes` counts them); past it, as past the count,
    /// saved states keep only their prefix. Default 512 MiB.
    pub max_saved_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_executions: 100_000,
            max_steps: 10_000,
            time_budget: None,
            snapshot_every_cost: Some(200_000),
            max_snapshots: 64,
            stop_on_first_bug: true,
            max_saved_snapshots: 65_536,
            max_saved_bytes: 512 << 20,
        }
    }
}

/// A failing execution: the failure and the decisions that lead to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bug {
    pub failure: Failure,
    /// The strategy that ran the failing execution (`Strategy::active`).
    pub found_by: String,
    pub schedule: Vec<Decision>,
    /// 1-based index of the execution that found it.
    pub execution: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub executions: u64,
    /// Steps the program ran, replayed prefixes included.
    pub steps: u64,
    /// Steps run only to get back to a resume point.
    pub replayed_steps: u64,
    pub snapshots_taken: u64,
    pub restores: u64,
    pub bugs: Vec<Bug>,
    /// Executions that failed (the hit count used by sampling statistics).
    pub failing_executions: u64,
    /// The strategy explored its whole space (within its own bound).
    pub exhausted: bool,
    /// The explorer bound that ended the run early, if one did.
    pub stopped_by: Option<BoundHit>,
    /// A bound of the strategy that pruned part of the space, if one did.
    pub strategy_bound: Option<BoundHit>,
    /// States saved at the strategy's request (`Strategy::save_request`):
    /// with a snapshot, and with only their prefix (over
    /// `max_saved_snapshots` or `max_saved_bytes`, or a program that cannot
    /// snapshot).
    pub saved_with_snapshot: u64,
    pub saved_as_prefix: u64,
    /// Executions started from a saved state (`Start::Saved`), by restoring
    /// its snapshot and by replaying its prefix.
    pub saved_restored: u64,
    pub saved_replayed: u64,
    /// State hashes computed for strategies that asked for them
    /// (`Strategy::wants_state_hash`).
    pub state_hashes: u64,
    /// The strategy's own counters at the end of the run (`Strategy::stats`:
    /// states explored, cache hits, ...).
    pub strategy_stats: Vec<Stat>,
    pub elapsed: Duration,
}

impl Report {
    pub fn first_bug(&self) -> Option<&Bug> {
        self.bugs.first()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExploreError<E: std::error::Error + 'static> {
    #[error(transparent)]
    Program(E),
    #[error("strategy `{strategy}` chose thread `{thread}` (alternative {alt}) at step {step}, which is not enabled")]
    InvalidDecision {
        strategy: String,
        thread: String,
        alt: u32,
        step: usize,
    },
    #[error("strategy `{strategy}` asked to resume after {prefix_len} steps, but the previous execution had only {len}")]
    BadResume {
        strategy: String,
        prefix_len: usize,
        len: usize,
    },
    #[error("strategy `{strategy}` asked to start from saved state {id}, which it never saved or already used")]
    UnknownSaved { strategy: String, id: u64 },
    #[error("the program reports running with no enabled thread at step {step} (a program must report a deadlock itself)")]
    NoEnabledThread { step: usize },
}

/// A state saved at a strategy's request: its prefix (a held node of the
/// explorer's prefix tree) and, when one was kept, its snapshot.
struct Saved<S> {
    node: NodeId,
    snapshot: Option<S>,
    /// `Program::snapshot_bytes` of the snapshot (0 without one).
    bytes: usize,
}

/// Interns the current path's first `depth` decisions into `tree`,
/// extending `path_nodes` (each new node held once by the path).
fn intern_path(
    tree: &mut PrefixTree<(Decision, Option<OpKind>)>,
    path_nodes: &mut Vec<NodeId>,
    decisions: &[Decision],
    ops: &[Option<OpKind>],
    depth: usize,
) {
    while path_nodes.len() < depth {
        let i = path_nodes.len();
        let parent = path_nodes.last().copied().unwrap_or(NIL);
        path_nodes.push(tree.push(parent, (decisions[i], ops[i])));
    }
}

/// Shortens the interned path to its first `len` nodes, dropping the path's
/// holds on the rest (deepest first).
fn truncate_path(
    tree: &mut PrefixTree<(Decision, Option<OpKind>)>,
    path_nodes: &mut Vec<NodeId>,
    len: usize,
) {
    while path_nodes.len() > len {
        if let Some(n) = path_nodes.pop() {
            tree.release(n);
        }
    }
}

/// Progress notifications, e.g. for a progress bar. Called after each
/// execution with the executions run so far.
pub type ProgressFn<'a> = dyn FnMut(&Report) + 'a;

pub struct Explorer<P: Program> {
    pub program: P,
    pub config: Config,
}

impl<P: Program> Explorer<P> {
    pub fn new(program: P, config: Config) -> Self {
        Explorer { program, config }
    }

    pub fn run(&mut self, strategy: &mut dyn Strategy) -> Result<Report, ExploreError<P::Error>> {
        self.run_with_progress(strategy, &mut |_| {})
    }

    pub fn run_with_progress(
        &mut self,
        strategy: &mut dyn Strategy,
        progress: &mut ProgressFn<'_>,
    ) -> Result<Report, ExploreError<P::Error>> {
        let started = Instant::now();
        let mut report = Report::default();
        let mut decisions: Vec<Decision> = Vec::new();
        // The operation each decision ran, for preemption accounting after a
        // resume (a switch after `yield_now` is not a preemption).
        let mut ops: Vec<Option<OpKind>> = Vec::new();
        // Snapshots along the current path: (prefix length, snapshot).
        let mut snaps: Vec<(usize, P::Snapshot)> = Vec::new();
        // Cost accumulated since the last snapshot, per prefix length.
        let mut costs: Vec<u64> = Vec::new();
        // Saved states: their prefixes share a prefix tree of (decision,
        // operation) nodes; `path_nodes[i]` is the node of the current
        // path's first `i + 1` decisions, interned only when a save needs it
        // and held once by the path.
        let mut tree: PrefixTree<(Decision, Option<OpKind>)> = PrefixTree::default();
        let mut path_nodes: Vec<NodeId> = Vec::new();
        let mut saved: BTreeMap<u64, Saved<P::Snapshot>> = BTreeMap::new();
        let mut saved_snapshots = 0usize;
        let mut saved_bytes = 0usize;
        let cfg = self.config.clone();

        loop {
            // Ask the strategy first: a strategy that has just finished its
            // space must be reported exhausted, not "stopped by a bound",
            // even when the bound is reached at the same time. An execution
            // begun and then cut by a bound is simply never run.
            let Some(start) = strategy.begin(report.executions) else {
                report.exhausted = strategy.exhausted();
                break;
            };
            if report.executions >= cfg.max_executions {
                report.stopped_by = Some(BoundHit {
                    bound: "executions",
                    value: cfg.max_executions,
                    knob: "--max-executions",
                });
                break;
            }
            if let Some(budget) = cfg.time_budget {
                if started.elapsed() >= budget {
                    report.stopped_by = Some(BoundHit {
                        bound: "time budget (seconds)",
                        value: budget.as_secs(),
                        knob: "--time-budget",
                    });
                    break;
                }
            }
            report.executions += 1;

            // Get to the start point.
            let mut last: Option<(Tid, Option<OpKind>)> = None;
            match start {
                Start::Fresh => {
                    self.program.reset().map_err(ExploreError::Program)?;
                    decisions.clear();
                    ops.clear();
                    snaps.clear();
                    costs.clear();
                    truncate_path(&mut tree, &mut path_nodes, 0);
                }
                Start::Resume { prefix_len } => {
                    if prefix_len > decisions.len() {
                        return Err(ExploreError::BadResume {
                            strategy: strategy.name().to_string(),
                            prefix_len,
                            len: decisions.len(),
                        });
                    }
                    while snaps.last().is_some_and(|(len, _)| *len > prefix_len) {
                        snaps.pop();
                    }
                    let from = match snaps.last() {
                        Some((len, snap)) => {
                            self.program.restore(snap).map_err(ExploreError::Program)?;
                            report.restores += 1;
                            *len
                        }
                        None => {
                            self.program.reset().map_err(ExploreError::Program)?;
                            0
                        }
                    };
                    for &d in &decisions[from..prefix_len] {
                        self.program.step(d).map_err(ExploreError::Program)?;
                        report.steps += 1;
                        report.replayed_steps += 1;
                    }
                    if prefix_len > 0 {
                        last = Some((decisions[prefix_len - 1].tid, ops[prefix_len - 1]));
                    }
                    decisions.truncate(prefix_len);
                    ops.truncate(prefix_len);
                    costs.truncate(prefix_len);
                    truncate_path(&mut tree, &mut path_nodes, prefix_len);
                }
                Start::Saved { id } => {
                    let Some(state) = saved.remove(&id) else {
                        return Err(ExploreError::UnknownSaved {
                            strategy: strategy.name().to_string(),
                            id,
                        });
                    };
                    let prefix = tree.prefix(state.node);
                    let len = prefix.len();
                    match state.snapshot {
                        Some(snap) => {
                            saved_snapshots -= 1;
                            saved_bytes -= state.bytes;
                            self.program.restore(&snap).map_err(ExploreError::Program)?;
                            report.restores += 1;
                            report.saved_restored += 1;
                            // Kept for backtracking below the saved state.
                            snaps.clear();
                            snaps.push((len, snap));
                            costs.clear();
                            costs.resize(len, 0);
                        }
                        None => {
                            report.saved_replayed += 1;
                            // Replay from the deepest snapshot the saved
                            // prefix shares with the current path.
                            let lcp = decisions
                                .iter()
                                .zip(&prefix)
                                .take_while(|(a, (b, _))| *a == b)
                                .count();
                            while snaps.last().is_some_and(|(l, _)| *l > lcp) {
                                snaps.pop();
                            }
                            let from = match snaps.last() {
                                Some((l, snap)) => {
                                    self.program.restore(snap).map_err(ExploreError::Program)?;
                                    report.restores += 1;
                                    *l
                                }
                                None => {
                                    self.program.reset().map_err(ExploreError::Program)?;
                                    0
                                }
                            };
                            costs.truncate(from);
                            for &(d, _) in &prefix[from..] {
                                let info = self.program.step(d).map_err(ExploreError::Program)?;
                                report.steps += 1;
                                report.replayed_steps += 1;
                                costs.push(costs.last().copied().unwrap_or(0) + info.cost);
                            }
                        }
                    }
                    decisions.clear();
                    ops.clear();
                    decisions.extend(prefix.iter().map(|(d, _)| *d));
                    ops.extend(prefix.iter().map(|(_, op)| *op));
                    if let Some(&(d, op)) = prefix.last() {
                        last = Some((d.tid, op));
                    }
                    // The path now is the saved prefix: hold its nodes, then
                    // drop the saved state's own hold.
                    truncate_path(&mut tree, &mut path_nodes, 0);
                    path_nodes = tree.chain(state.node);
                    for &n in &path_nodes {
                        tree.hold(n);
                    }
                    tree.release(state.node);
                }
            }

            let outcome = loop {
                match self.program.status() {
                    Status::Running => {}
                    Status::Finished => break Outcome::Finished,
                    Status::Failed(f) => break Outcome::Failed(f.clone()),
                }
                if decisions.len() as u64 >= cfg.max_steps {
                    let who = last.map(|(t, _)| self.program.thread_name(t));
                    break Outcome::Failed(Failure::new(
                        FailureKind::StepLimit,
                        who,
                        format!(
                            "execution exceeded `{}` steps (possible livelock); raise --max-steps",
                            cfg.max_steps
                        ),
                    ));
                }
                if strategy.wants_state_hash() {
                    let hash = self.program.state_hash();
                    report.state_hashes += u64::from(hash.is_some());
                    strategy.observe_state(hash);
                }
                let ctx = Context {
                    step: decisions.len(),
                    threads: self.program.threads(),
                    last,
                    prefix: &decisions,
                };
                if ctx.enabled().next().is_none() {
                    return Err(ExploreError::NoEnabledThread {
                        step: decisions.len(),
                    });
                }
                let Some(d) = strategy.decide(&ctx) else {
                    break Outcome::Abandoned;
                };
                let valid = ctx
                    .thread(d.tid)
                    .is_some_and(|t| t.pending.enabled && d.alt < t.pending.alts);
                if !valid {
                    return Err(ExploreError::InvalidDecision {
                        strategy: strategy.name().to_string(),
                        thread: self.program.thread_name(d.tid),
                        alt: d.alt,
                        step: decisions.len(),
                    });
                }
                if let Some(id) = strategy.save_request() {
                    let depth = decisions.len();
                    intern_path(&mut tree, &mut path_nodes, &decisions, &ops, depth);
                    let node = path_nodes.last().copied().unwrap_or(NIL);
                    tree.hold(node);
                    // The byte budget is checked before the snapshot is taken
                    // (its size is known only after), so it can be passed by
                    // one snapshot; checking after would take and drop a
                    // snapshot at every save once the budget is full.
                    let room = saved_snapshots < cfg.max_saved_snapshots
                        && saved_bytes < cfg.max_saved_bytes;
                    let snapshot = if room {
                        self.program.snapshot().map_err(ExploreError::Program)?
                    } else {
                        None
                    };
                    let bytes = snapshot
                        .as_ref()
                        .map_or(0, |s| self.program.snapshot_bytes(s));
                    if snapshot.is_some() {
                        saved_snapshots += 1;
                        saved_bytes += bytes;
                        report.saved_with_snapshot += 1;
                    } else {
                        report.saved_as_prefix += 1;
                    }
                    if let Some(old) = saved.insert(
                        id,
                        Saved {
                            node,
                            snapshot,
                            bytes,
                        },
                    ) {
                        tree.release(old.node);
                        saved_snapshots -= usize::from(old.snapshot.is_some());
                        saved_bytes -= old.bytes;
                    }
                }
                let info = self.program.step(d).map_err(ExploreError::Program)?;
                report.steps += 1;
                strategy.observe(info);
                last = Some((d.tid, info.op));
                let cost = info.cost;
                decisions.push(d);
                ops.push(info.op);
                let acc = costs.last().copied().unwrap_or(0) + cost;
                costs.push(acc);
                if let Some(every) = cfg.snapshot_every_cost {
                    let since = match snaps.last() {
                        Some((len, _)) if *len > 0 => costs[*len - 1],
                        _ => 0,
                    };
                    if acc - since >= every && matches!(self.program.status(), Status::Running) {
                        if let Some(s) = self.program.snapshot().map_err(ExploreError::Program)? {
                            report.snapshots_taken += 1;
                            snaps.push((decisions.len(), s));
                            if snaps.len() > cfg.max_snapshots {
                                snaps.remove(0);
                            }
                        }
                    }
                }
            };
            strategy.end(&outcome);
            if let Outcome::Failed(failure) = outcome {
                report.failing_executions += 1;
                if report.bugs.is_empty() || !cfg.stop_on_first_bug {
                    report.bugs.push(Bug {
                        failure,
                        found_by: strategy.active().to_string(),
                        schedule: decisions.clone(),
                        execution: report.executions,
                    });
                }
                if cfg.stop_on_first_bug {
                    break;
                }
            }
            progress(&report);
        }
        report.strategy_bound = strategy.bound_hit();
        report.strategy_stats = strategy.stats();
        report.elapsed = started.elapsed();
        Ok(report)
    }
}
