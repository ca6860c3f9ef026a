//! The one small trait every exploration strategy implements, modelled on
//! shuttle's `Scheduler`: the explorer asks where to start each execution and
//! which decision to take at each step; the strategy never touches the
//! program itself, which keeps strategies testable on pure-Rust models.

use crate::program::{StepInfo, ThreadView};
use wasmrace_trace::{Decision, Failure, OpKind, Tid};

/// Where the next execution starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// From the program's initial state.
    Fresh,
    /// After the first `prefix_len` decisions of the previous execution. The
    /// explorer gets there by restoring a snapshot it holds or by replaying
    /// those decisions, without asking the strategy; the strategy's next
    /// `decide` is for step `prefix_len`.
    Resume { prefix_len: usize },
    /// From a state saved earlier at the strategy's request (see
    /// [`Strategy::save_request`]), with the decisions that led there as the
    /// execution's prefix. The explorer restores the state's snapshot when it
    /// kept one, or else replays its prefix (from the deepest snapshot the
    /// prefix shares with the current path); strategies cannot tell the
    /// difference. Starting from a saved state uses it up: to start there
    /// again, save it again. The strategy's next `decide` is for the step
    /// after the prefix.
    Saved { id: u64 },
}

/// A counter a strategy keeps about its own work (states explored, cache
/// hits), printed by reports as `name: value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Lowercase, e.g. `states explored`.
    pub name: &'static str,
    pub value: u64,
}

impl Stat {
    pub fn new(name: &'static str, value: u64) -> Self {
        Stat { name, value }
    }
}

/// What a strategy sees when it must decide.
pub struct Context<'a> {
    /// 0-based index of the step about to be taken in this execution.
    pub step: usize,
    /// Live threads in creation order, blocked ones included.
    pub threads: &'a [ThreadView],
    /// The thread that took the previous step and the operation it ran.
    pub last: Option<(Tid, Option<OpKind>)>,
    /// Decisions taken so far in this execution (including a resumed prefix).
    pub prefix: &'a [Decision],
}

impl Context<'_> {
    /// Enabled decisions in a canonical order: threads in creation order, and
    /// for each its alternatives in increasing order.
    pub fn enabled(&self) -> impl Iterator<Item = Decision> + '_ {
        self.threads
            .iter()
            .filter(|t| t.pending.enabled)
            .flat_map(|t| (0..t.pending.alts).map(move |a| Decision::new(t.tid, a)))
    }

    pub fn thread(&self, tid: Tid) -> Option<&ThreadView> {
        self.threads.iter().find(|t| t.tid == tid)
    }

    pub fn is_preemption(&self, next: Tid) -> bool {
        crate::program::is_preemption(self.threads, self.last, next)
    }
}

/// How an execution ended, as reported to the strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    Failed(Failure),
    /// The strategy gave up on this execution (`decide` returned `None`).
    Abandoned,
}

/// A bound that cut exploration short, and the knob that raises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundHit {
    pub bound: &'static str,
    pub value: u64,
    /// Name of the config field / CLI flag that raises it (`--preemption-bound`).
    pub knob: &'static str,
}

pub trait Strategy {
    /// Short name used in reports and schedule files (`dfs`, `random`).
    fn name(&self) -> &str;

    /// The seed that, with the same options, reproduces this strategy's run.
    fn seed(&self) -> u64 {
        0
    }

    /// Starts the next execution, or returns `None` when the strategy has
    /// nothing more to explore. `executions` counts executions begun so far.
    fn begin(&mut self, executions: u64) -> Option<Start>;

    /// Picks the next decision; it must be one of `ctx.enabled()`. Returning
    /// `None` abandons the execution (e.g. a replayed schedule diverged).
    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision>;

    /// Called after every step taken on a decision from `decide`. Steps the
    /// explorer runs only to get back to a resume point are not observed
    /// again: the strategy saw them in an earlier execution, and whether they
    /// are replayed or restored from a snapshot depends on the snapshot
    /// policy, which must not change what a strategy does.
    fn observe(&mut self, _step: &StepInfo) {}

    /// Called when an execution ends.
    fn end(&mut self, _outcome: &Outcome) {}

    /// True once the strategy has explored its whole space (within its own
    /// bound, if it has one; see `bound_hit`).
    fn exhausted(&self) -> bool {
        false
    }

    /// A bound of the strategy's own (e.g. preemptions) that pruned part of
    /// the space, if any did.
    fn bound_hit(&self) -> Option<BoundHit> {
        None
    }

    /// The strategy that chose the current (or last) execution: itself,
    /// or the member of a combination such as the portfolio. Reports say
    /// which one found a bug.
    fn active(&self) -> &str {
        self.name()
    }

    /// Whether the explorer should hash the program state at each decision
    /// point and pass the hash to [`observe_state`](Self::observe_state).
    /// Asked before every decision; off by default because hashing a wasm
    /// state costs tens of microseconds. State-caching strategies (SES, DFS
    /// with `state_cache`) say yes.
    fn wants_state_hash(&self) -> bool {
        false
    }

    /// The hash of the state the next `decide` is about (`Program::
    /// state_hash`: memory, globals, host objects and thread states for
    /// wasm), or `None` when the program cannot hash. Called right before
    /// `decide`, only when `wants_state_hash()` said yes.
    fn observe_state(&mut self, _hash: Option<[u8; 32]>) {}

    /// Called after each `decide` that returned a decision, before the step
    /// runs. `Some(id)` asks the explorer to save the state the program is
    /// in (the one `decide` was just asked about, reached by `ctx.prefix`)
    /// under `id`, so that a later execution can start there with
    /// `Start::Saved { id }`. The explorer keeps a snapshot of it while it
    /// holds fewer than `Config::max_saved_snapshots` (and the program can
    /// snapshot), else only its prefix, in a prefix tree shared with the
    /// other saved states. Saving under an id still held replaces the old
    /// state. Saved states never started from are dropped when the run ends.
    /// Wrappers must forward this (and keep, per id, whatever per-step data
    /// they need to continue after a `Saved` start).
    fn save_request(&mut self) -> Option<u64> {
        None
    }

    /// Counters about the strategy's own work, in a fixed order; the explorer
    /// copies them into `Report::strategy_stats` when the run ends.
    fn stats(&self) -> Vec<Stat> {
        Vec::new()
    }
}

impl<S: Strategy + ?Sized> Strategy for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn seed(&self) -> u64 {
        (**self).seed()
    }
    fn begin(&mut self, executions: u64) -> Option<Start> {
        (**self).begin(executions)
    }
    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        (**self).decide(ctx)
    }
    fn observe(&mut self, step: &StepInfo) {
        (**self).observe(step)
    }
    fn end(&mut self, outcome: &Outcome) {
        (**self).end(outcome)
    }
    fn exhausted(&self) -> bool {
        (**self).exhausted()
    }
    fn bound_hit(&self) -> Option<BoundHit> {
        (**self).bound_hit()
    }
    fn active(&self) -> &str {
        (**self).active()
    }
    fn wants_state_hash(&self) -> bool {
        (**self).wants_state_hash()
    }
    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        (**self).observe_state(hash)
    }
    fn save_request(&mut self) -> Option<u64> {
        (**self).save_request()
    }
    fn stats(&self) -> Vec<Stat> {
        (**self).stats()
    }
}
