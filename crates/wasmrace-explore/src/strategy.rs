//! The one small trait every exploration strategy implements, modelled on
//! shuttle's `Scheduler`: the explorer asks where to start each execution and
//! which decision to take at each step; the strategy never touches the
//! program itself, which keeps strategies testable on pure-Rust models.
//! What a strategy is and where it stands (its split, state hashes,
//! counters, races, ...) are plain data with defaults, not methods it opts
//! into.

use crate::explorer::blocks::Blocks;
use crate::explorer::partition::Split;
use crate::explorer::visits::Logged;
use crate::program::{StepInfo, ThreadView};
pub use crate::splitting::{Phase, Role, Splitting};
use wasmrace_trace::{Decision, Failure, Oid, OpKind, Tid};

/// Where the next execution starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// From the program's initial state.
    Fresh,
    /// After the first `prefix_len` decisions of the previous execution. The
    /// explorer gets there by restoring a snapshot it holds or by replaying
    /// those decisions, without asking the strategy; the strategy's next
    /// `decide` is for step `prefix_len`.
    Resume {
        /// Decisions of the previous execution kept.
        prefix_len: usize,
    },
    /// From a state saved earlier at the strategy's request (see
    /// [`Strategy::save_request`]), with the decisions that led there as the
    /// execution's prefix. The explorer restores the state's snapshot when it
    /// kept one, or else replays its prefix (from the deepest snapshot the
    /// prefix shares with the current path); strategies cannot tell the
    /// difference. Starting from a saved state uses it up: to start there
    /// again, save it again. The strategy's next `decide` is for the step
    /// after the prefix.
    Saved {
        /// The id the strategy gave the state when it asked to save it.
        id: u64,
    },
}

/// A counter a strategy keeps about its own work (states explored, cache
/// hits), printed by reports as `name: value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Lowercase, e.g. `states explored`.
    pub name: &'static str,
    /// The count at the end of the run.
    pub value: u64,
    /// How the values of a run's partitions make the run's.
    pub kind: StatKind,
}

/// How the values of a counter in the partitions of a run (`--jobs`,
/// `--partition`) make the whole run's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatKind {
    /// A count of things done: the partitions' values add up.
    Count,
    /// A peak or a setting (the largest wakeup tree, the delay bound
    /// reached): the largest of the partitions' values.
    Peak,
}

impl Stat {
    /// The count `name` with `value` ([`StatKind::Count`]).
    pub fn new(name: &'static str, value: u64) -> Self {
        Stat {
            name,
            value,
            kind: StatKind::Count,
        }
    }

    /// The peak `name` with `value` ([`StatKind::Peak`]).
    pub fn peak(name: &'static str, value: u64) -> Self {
        Stat {
            name,
            value,
            kind: StatKind::Peak,
        }
    }

    /// Folds another partition's value of this counter into this one.
    pub fn combine(&mut self, other: u64) {
        self.value = match self.kind {
            StatKind::Count => self.value.saturating_add(other),
            StatKind::Peak => self.value.max(other),
        };
    }
}

/// What a strategy sees when it must decide.
pub struct Context<'a> {
    /// 0-based index of the step about to be taken in this execution.
    pub step: usize,
    /// Live threads in creation order, blocked ones included.
    pub threads: &'a [ThreadView],
    /// The threads fair scheduling hides from this step (bit `i`:
    /// `threads[i]`, the first 64 only): they could run, but are shown
    /// disabled. 0 without fair scheduling. A strategy that reads a
    /// disabled thread as one blocked on an object must tell them apart.
    pub hidden: u64,
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

    /// Whether fair scheduling hides `threads[i]` from this step (see
    /// [`hidden`](Self::hidden)).
    pub fn is_hidden(&self, i: usize) -> bool {
        i < 64 && self.hidden & (1 << i) != 0
    }

    /// The live thread `tid`, or `None` if it exited or never existed.
    pub fn thread(&self, tid: Tid) -> Option<&ThreadView> {
        self.threads.iter().find(|t| t.tid == tid)
    }

    /// Whether running `next` now preempts the thread that took the last
    /// step (see [`crate::is_preemption`]).
    pub fn is_preemption(&self, next: Tid) -> bool {
        crate::program::is_preemption(self.threads, self.last, next)
    }
}

/// How an execution ended, as reported to the strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every thread exited.
    Finished,
    /// The execution failed (a bug).
    Failed(Failure),
    /// The strategy gave up on this execution (`decide` returned `None`).
    Abandoned,
}

/// A bound that cut exploration short, and the knob that raises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundHit {
    /// What is bounded, lowercase with its unit, e.g. `preemptions`.
    pub bound: &'static str,
    /// The bound's value in that unit.
    pub value: u64,
    /// Name of the config field / CLI flag that raises it (`--preemption-bound`).
    pub knob: &'static str,
}

/// A real race: two statements a strategy brought to the same object at
/// the same time, with conflicting accesses (RaceFuzzer's "real races").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealRace {
    /// The racing pair of sites (smaller first).
    pub sites: (u64, u64),
    /// The object both statements were about to access.
    pub obj: Oid,
    /// Times the race was created, over all executions.
    pub count: u64,
    /// Executions that created it at least once.
    pub executions: u64,
    /// 1-based number of the first execution that created it (as
    /// `Bug::execution`).
    pub first_execution: u64,
}

/// How a strategy's run is shaped, as data the explorer reads whenever it
/// plans (before a run, and before each decision for `hashes_states`):
/// how its work splits and whether it wants state hashes. The default is
/// a strategy that runs whole, on one thread, without hashing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// How the strategy's work splits into partitions (`Config::partition`)
    /// and between threads. A strategy says `ByExecution` only if execution
    /// `i` depends on nothing but its seed and `i` (nothing carried over
    /// from earlier executions), and `ByPrefix` only if the executions below
    /// a prefix do not depend on other subtrees and its [`Standing`] gives
    /// an [`order_key`](Standing::order_key).
    pub split: Split,
    /// For a strategy that splits by execution: how its executions group
    /// into blocks that depend on one another and so run on one worker, in
    /// order ([`Blocks`]). `begin` is then given the indices of whole
    /// blocks, each block's in order, and must start a block afresh
    /// whenever the index is not the one after the last.
    pub blocks: Blocks,
    /// Whether the explorer should hash the program state at each decision
    /// point and pass the hash to [`Strategy::observe_state`]. Off by
    /// default because hashing a wasm state costs tens of microseconds.
    /// State-caching strategies (SES, DFS with `state_cache`) say yes; a
    /// combination (the portfolio) says what its current member says.
    pub hashes_states: bool,
}

/// Where a strategy stands, as data the explorer reads after an execution
/// and when the run ends (reports, bugs, the split's bookkeeping). Every
/// field defaults to "not this one", so a strategy fills in only what it
/// has. Combinations (the portfolio) answer for their current member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing<'a> {
    /// The seed that, with the same options, reproduces this strategy's run.
    pub seed: u64,
    /// True once the strategy has explored its whole space (within its own
    /// bound, if it has one; see `bound_hit`).
    pub exhausted: bool,
    /// A bound of the strategy's own (e.g. preemptions) that pruned part of
    /// the space, if any did.
    pub bound_hit: Option<BoundHit>,
    /// How many times that bound pruned so far, so that a pool can tell
    /// which execution first did; `None`: 1 once `bound_hit` says it did,
    /// else 0 (see [`prunes`](Self::prunes)).
    pub bound_prunes: Option<u64>,
    /// The member of a combination (the portfolio) that chose the current
    /// (or last) execution; `None` means the strategy itself. Reports say
    /// which one found a bug.
    pub active: Option<&'a str>,
    /// Counters about the strategy's own work, in a fixed order; the
    /// explorer copies them into `Report::strategy_stats`.
    pub stats: Vec<Stat>,
    /// Real races the strategy created (RaceFuzzer), for reports.
    pub real_races: Vec<RealRace>,
    /// The current (or last) execution's place in the strategy's
    /// exploration order, for `Split::ByPrefix` and `Split::Jobs`
    /// strategies: keys compare lexicographically, an execution explored
    /// earlier has a smaller key, and a key depends only on the execution
    /// (not on which other subtrees a partition skipped), so the bugs of
    /// partitions can be put back in the order one run would have found
    /// them.
    pub order_key: Option<Vec<u32>>,
    /// For a strategy whose blocks are [`Blocks::Open`]: after `end`,
    /// whether the next execution goes on the block of the one that ended
    /// (false: the next `begin` starts a new block).
    pub block_goes_on: bool,
    /// For a strategy that splits by jobs ([`Split::Jobs`]), after `begin`:
    /// whether the job begun is another partition's (one above the split
    /// depth, run only to reach the jobs below it): its execution counts
    /// nowhere here, and what the strategy counts of it it forgets at `end`.
    pub foreign: bool,
    /// For a strategy sharing a pool ([`Role::Shared`]): a number that
    /// changes whenever its next executions stop following its last ones
    /// directly in the exploration order (it took or resumed another
    /// subtree), so that the pool can number executions as one run does
    /// (see [`steal`](crate::explorer::steal)).
    pub stretch: u64,
    /// For a strategy sharing a pool and a state cache
    /// ([`SharedVisits`](crate::explorer::visits::SharedVisits)): the last
    /// execution as the pool logs it, so that it can count only the
    /// executions one run has.
    pub logged: Option<Logged>,
    /// For a phased strategy after an opening phase: the most decisions
    /// one of its opening executions took, which the sampling phase is
    /// given as `Phase::Sampling { longest }` (the strategy measures it
    /// itself, as a whole run needs it too).
    pub longest: usize,
}

impl Standing<'_> {
    /// [`bound_prunes`](Self::bound_prunes), or 1 once the bound hit, else 0.
    pub fn prunes(&self) -> u64 {
        self.bound_prunes
            .unwrap_or(u64::from(self.bound_hit.is_some()))
    }
}

/// A strategy: the small core every strategy implements.
///
/// **Lifecycle.** The explorer calls, for each execution: `begin` once
/// (`None` ends the run); then, until the program finishes or fails,
/// `decide` with the enabled threads and, when it returns a decision, runs
/// that step and calls `observe` with what it did (`decide` returning `None`
/// abandons the execution); then `end` once with the outcome. A
/// `Start::Resume` or `Start::Saved` begins the execution after a prefix the
/// strategy chose earlier: the explorer gets there by itself (restoring a
/// snapshot or replaying), without calling `decide` or `observe` for the
/// prefix, so what a strategy does never depends on the snapshot policy. A
/// run ends when `begin` returns `None`, a bound of the explorer is hit, or
/// (by default) an execution fails; `end` is not called for an execution
/// that was never begun.
///
/// **Data, not opt-ins.** Only `name`, `begin` and `decide` are required.
/// What a strategy is and where it stands are two plain structs,
/// [`Profile`] and [`Standing`], whose defaults mean "not this one"; the
/// few hooks with behaviour (state hashes, saved states, PCT's length)
/// have defaults that do nothing. A strategy whose work splits says so in
/// its `Profile`; only one that must be set up for its part of a split
/// run (a shared pool, a partition, rounds, phases) implements
/// [`Splitting`] and returns itself from [`splitting`](Self::splitting).
/// Measuring what a strategy does is not the strategy's business: the
/// explorer runs an [`Observer`](crate::Observer) beside it.
pub trait Strategy {
    /// Short name used in reports and schedule files (`dfs`, `random`).
    fn name(&self) -> &str;

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

    /// How the strategy's run is shaped ([`Profile`]); by default, whole,
    /// on one thread, without state hashes.
    fn profile(&self) -> Profile {
        Profile::default()
    }

    /// Where the strategy stands ([`Standing`]); by default, nowhere in
    /// particular.
    fn standing(&self) -> Standing<'_> {
        Standing::default()
    }

    /// The hash of the state the next `decide` is about (`Program::
    /// state_hash`: memory, globals, host objects and thread states for
    /// wasm, with the fairness state folded in once fair scheduling knows
    /// something about a thread, since it decides which threads may run
    /// from here), or `None` when the program cannot hash. Called right
    /// before `decide`, only when the [`Profile`] says `hashes_states`.
    fn observe_state(&mut self, _hash: Option<[u8; 32]>) {}

    /// For a strategy that hashes states: the hashes of the states of the
    /// steps of the current execution it replays along a path it knows, as
    /// one started from a saved state at their end would (SES on several
    /// threads: its entry's prefix); `[i]` is the state after `i` steps,
    /// `None` where not known. Default: none. The explorer hashes none of
    /// the states of those steps (as many as the slice holds), nothing
    /// looking them up, though it still steps as for a strategy that
    /// hashes; it takes their hashes from here instead, so that a cycle a
    /// state cache closes back to one of them is a livelock, as for the
    /// execution started from the saved state, which keeps them.
    fn known_hashes(&self) -> &[Option<[u8; 32]>] {
        &[]
    }

    /// Called after each `decide` that returned a decision, before the step
    /// runs. `Some(id)` asks the explorer to save the state the program is
    /// in (the one `decide` was just asked about, reached by `ctx.prefix`)
    /// under `id`, so that a later execution can start there with
    /// `Start::Saved { id }`. The explorer keeps a snapshot of it while it
    /// holds fewer than `Config::max_saved_snapshots` (and the program can
    /// snapshot), else only its prefix, in a prefix tree shared with the
    /// other saved states. Saving under an id still held replaces the old
    /// state. Saved states never started from are dropped when the run ends.
    fn save_request(&mut self) -> Option<u64> {
        None
    }

    /// The run length (steps) a strategy that places its choices along an
    /// execution (PCT's change points) assumes from now on, fixed; ignored
    /// by the others.
    fn set_length_estimate(&mut self, _steps: usize) {}

    /// The strategy's part in a split run, if it must be set up for one
    /// ([`Splitting`]); `None` (the default) for the others, whose split
    /// (if any) is all in their [`Profile`].
    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        None
    }
}

/// The strategy's name, or the member of a combination that chose the
/// current (or last) execution ([`Standing::active`]): the one a bug is
/// found by.
pub fn active_name(strategy: &(impl Strategy + ?Sized)) -> String {
    let standing = strategy.standing();
    standing.active.unwrap_or(strategy.name()).to_string()
}

impl<S: Strategy + ?Sized> Strategy for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
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
    fn profile(&self) -> Profile {
        (**self).profile()
    }
    fn standing(&self) -> Standing<'_> {
        (**self).standing()
    }
    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        (**self).observe_state(hash)
    }
    fn known_hashes(&self) -> &[Option<[u8; 32]>] {
        (**self).known_hashes()
    }
    fn save_request(&mut self) -> Option<u64> {
        (**self).save_request()
    }
    fn set_length_estimate(&mut self, steps: usize) {
        (**self).set_length_estimate(steps)
    }
    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        (**self).splitting()
    }
}
