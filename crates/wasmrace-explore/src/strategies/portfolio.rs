//! The portfolio: what `wasmrace check` runs when no strategy is named.
//! Opening members (optimal DPOR, then DFS with iterative preemption
//! bounding) explore systematically, one after the other, each for a
//! bounded number of executions; then sampling members (POS, PCT, random
//! walk) take turns in rounds until the budget is spent. Reports say which
//! member found a bug (`active`). An opening member that explores its whole
//! space with no bound cutting it ends the run: a proof.
//!
//! DPOR opens because, on the bench suite's 21 bugs, it found 20 within
//! 1,000 executions (bounded DFS 19) and needed fewer executions than
//! bounded DFS on 13 of them, as many on 6 (docs/performance.md, "Bug
//! finding: the bench suite"); and a test whose traces it exhausts gets a
//! verdict.
//!
//! Each opening member runs without interruption: DFS and DPOR resume each
//! execution from a prefix of the previous one, which another member's
//! execution in between would invalidate. Sampling members start every
//! execution afresh, so they can be interleaved freely.
//!
//! **Phases.** Execution `j` of the sampling phase belongs to a member and
//! to that member's own execution index by `j` alone (turns of fixed
//! length), and PCT's run length is fixed for the whole phase: the longest
//! opening execution (Burckhardt et al. need the length up front; the
//! openings, a thousand systematic executions or more, have measured it).
//! So the sampling phase splits by execution, and the openings depend on
//! nothing but themselves: `check --jobs` runs the openings side by side
//! and deals the sampling indices out ([`Split::Phases`]), and reports
//! what this one-thread order reports. Partitions on other machines
//! (`--partition`) cannot share the openings' outcome, so each runs the
//! openings' executions itself as a prologue ([`Blocks::Prologue`], as
//! long as the openings can be), counted by the partition that owns each
//! index, and takes its share of the rest by index.

use crate::explorer::{Blocks, Split};
use crate::program::StepInfo;
use crate::strategies::descriptor::{Descriptor, Knob, StrategyOptions, Takes};
use crate::strategies::{Dfs, DfsOptions, Dpor, Pct, Pos, RandomWalk};
use crate::strategy::{
    BoundHit, Context, Outcome, Phase, Profile, Role, Splitting, Standing, Start, Stat, Strategy,
};
use wasmrace_trace::Decision;

/// `portfolio` in the [registry](crate::strategies::registry), the
/// default: optimal DPOR for [`OPENING_EXECUTIONS`] executions, then DFS
/// with `--preemption-bound` (default 2) for as many, then POS, PCT and
/// random walk in turns of 100 executions.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "portfolio",
    about: "Optimal DPOR for 1,000 executions (a proof when it exhausts the traces), then DFS \
            with iterative preemption bounding for 1,000, then POS, PCT and random walk in \
            turns until the budget is spent",
    takes: &[Takes::always(Knob::PreemptionBound)],
    always: &[],
    defaults: StrategyOptions {
        preemption_bound: Some(Some(2)),
        ..StrategyOptions::NONE
    },
    refuses: &[],
    build: |o, seed| Box::new(default_portfolio(preemption_bound(o), seed)),
    describe: |o, seed| match preemption_bound(o) {
        Some(b) => {
            format!(
                "portfolio: dpor, then dfs with preemption bound {b}, then pos, pct, random; \
                 seed {seed}"
            )
        }
        None => format!("portfolio: dpor, then unbounded dfs, then pos, pct, random; seed {seed}"),
    },
    options_json: |o| {
        let mut json = serde_json::Map::new();
        json.insert("preemption_bound".into(), preemption_bound(o).into());
        json
    },
};

/// Executions each opening member (DPOR, then DFS) runs before the next
/// one, then the samplers, take over.
pub const OPENING_EXECUTIONS: u64 = 1000;

fn preemption_bound(o: &StrategyOptions) -> Option<u32> {
    o.preemption_bound.unwrap_or(Some(2))
}

/// The portfolio `wasmrace check` runs: optimal DPOR for
/// [`OPENING_EXECUTIONS`], then DFS bounded at `preemption_bound` for as
/// many, then POS, PCT and random walk, 100 executions a turn, all seeded
/// with `seed`.
pub fn default_portfolio(preemption_bound: Option<u32>, seed: u64) -> Portfolio {
    let openings: Vec<(Box<dyn Strategy>, u64)> = vec![
        (Box::new(Dpor::optimal()), OPENING_EXECUTIONS),
        (
            Box::new(Dfs::new(DfsOptions { preemption_bound })),
            OPENING_EXECUTIONS,
        ),
    ];
    let members: Vec<(Box<dyn Strategy>, u64)> = vec![
        (Box::new(Pos::new(seed)), 100),
        // Fixed length: the portfolio sets it from the openings.
        (
            Box::new(
                Pct::new(seed, Pct::DEFAULT_DEPTH)
                    .with_length_estimate(Pct::INITIAL_LENGTH_GUESS, false),
            ),
            100,
        ),
        (Box::new(RandomWalk::new(seed)), 100),
    ];
    Portfolio::with_openings(openings, members, seed)
}

/// One member of the portfolio with its budget and progress.
struct Member {
    strategy: Box<dyn Strategy>,
    /// Executions per turn.
    round: u64,
    /// Executions this opening member has begun (passed to its `begin`,
    /// so that it behaves as it would alone).
    executions: u64,
}

/// The default strategy: an opening DFS member, then sampling members in
/// turns (see the module documentation).
pub struct Portfolio {
    /// The opening members, run one after the other, each alone.
    openings: Vec<Member>,
    /// The opening member running, or `openings.len()` once all are done.
    opening: usize,
    members: Vec<Member>,
    /// Who runs the current execution: `None` for the opening member.
    current: Option<usize>,
    /// The phase this instance is restricted to (`Role::Phase`), or `None`
    /// for the whole run.
    phase: Option<Phase>,
    /// In a whole run, the executions begun before the sampling phase (its
    /// execution `j` is the run's `from + j`), once it has started.
    sampling_from: Option<u64>,
    /// The index after the last opening execution begun.
    openings_end: u64,
    /// Steps of the current execution, and the longest opening execution.
    steps: usize,
    longest: usize,
    /// An opening member explored its whole space with no bound cutting
    /// it: nothing is left for the samplers to find.
    complete: bool,
    /// The counters of the member that completed the search.
    complete_stats: Vec<Stat>,
    bound_hit: Option<BoundHit>,
    seed: u64,
}

impl Portfolio {
    /// `opening` runs first for at most `opening_round` executions; then
    /// each of `members` (strategy, executions per turn) takes turns.
    pub fn new(
        opening: Option<(Box<dyn Strategy>, u64)>,
        members: Vec<(Box<dyn Strategy>, u64)>,
        seed: u64,
    ) -> Self {
        Self::with_openings(opening.into_iter().collect(), members, seed)
    }

    /// `openings` (strategy, executions) run one after the other, each
    /// alone and from a fresh start, until one explores its whole space
    /// (the run ends there) or all have spent their executions; then each
    /// of `members` (strategy, executions per turn) takes turns.
    pub fn with_openings(
        openings: Vec<(Box<dyn Strategy>, u64)>,
        members: Vec<(Box<dyn Strategy>, u64)>,
        seed: u64,
    ) -> Self {
        let member = |(strategy, round): (Box<dyn Strategy>, u64)| Member {
            strategy,
            round: round.max(1),
            executions: 0,
        };
        Portfolio {
            openings: openings.into_iter().map(member).collect(),
            opening: 0,
            members: members.into_iter().map(member).collect(),
            current: None,
            phase: None,
            sampling_from: None,
            openings_end: 0,
            steps: 0,
            longest: 0,
            complete: false,
            complete_stats: Vec::new(),
            bound_hit: None,
            seed,
        }
    }

    fn member(&mut self) -> &mut Member {
        match self.current {
            None => &mut self.openings[self.opening],
            Some(i) => &mut self.members[i],
        }
    }

    fn member_ref(&self) -> Option<&Member> {
        match self.current {
            None => self.openings.get(self.opening),
            Some(i) => self.members.get(i),
        }
    }

    /// Ends the current opening member; the run is complete when it
    /// explored its whole space with no bound cutting it. The bound hit
    /// reported is the last opening's.
    fn finish_opening(&mut self) {
        if let Some(o) = self.openings.get(self.opening) {
            let standing = o.strategy.standing();
            let bound = standing.bound_hit;
            self.complete = standing.exhausted && bound.is_none();
            if self.complete {
                // What the proof covered, the same in every partition that
                // ran the openings: merged as peaks, not added up.
                self.complete_stats = (standing.stats.into_iter())
                    .map(|s| Stat::peak(s.name, s.value))
                    .collect();
            }
            self.bound_hit = bound;
        }
        self.opening += 1;
    }

    /// Starts the next execution of an opening member, moving on to the
    /// next opening when one is spent; `None` when all are done.
    fn begin_opening(&mut self) -> Option<Start> {
        while self.opening < self.openings.len() {
            if let Some(start) = self.begin_this_opening() {
                return Some(start);
            }
            if self.complete {
                return None;
            }
        }
        None
    }

    /// The next execution of the current opening member, or `None` when
    /// it is spent (and then finished).
    fn begin_this_opening(&mut self) -> Option<Start> {
        let o = self.openings.get_mut(self.opening)?;
        if o.executions < o.round {
            if let Some(start) = o.strategy.begin(o.executions) {
                o.executions += 1;
                self.current = None;
                return Some(start);
            }
        }
        self.finish_opening();
        None
    }

    /// The member that runs execution `j` of the sampling phase, and that
    /// member's own index of it: turns of each member's length, in order.
    fn slot(&self, j: u64) -> Option<(usize, u64)> {
        let cycle: u64 = self.members.iter().map(|m| m.round).sum();
        if cycle == 0 {
            return None;
        }
        let (turns, mut at) = (j / cycle, j % cycle);
        for (i, m) in self.members.iter().enumerate() {
            if at < m.round {
                return Some((i, turns * m.round + at));
            }
            at -= m.round;
        }
        None
    }

    /// Starts execution `j` of the sampling phase. A member that ends, or
    /// asks to resume an execution it did not run last, ends the phase.
    fn begin_sampling(&mut self, j: u64) -> Option<Start> {
        let (turn, own) = self.slot(j)?;
        let ran_last = self.current == Some(turn) && self.phase.is_none();
        let start = self.members[turn].strategy.begin(own)?;
        if matches!(start, Start::Resume { .. }) && !ran_last {
            return None;
        }
        self.current = Some(turn);
        Some(start)
    }

    /// Fixes the run length of the members that place choices along an
    /// execution (PCT): the longest opening execution, else PCT's guess.
    fn fix_length_estimate(&mut self, longest: usize) {
        let steps = if longest > 0 {
            longest
        } else {
            Pct::INITIAL_LENGTH_GUESS
        };
        for m in &mut self.members {
            m.strategy.set_length_estimate(steps);
        }
    }
}

impl Strategy for Portfolio {
    fn name(&self) -> &str {
        "portfolio"
    }

    fn begin(&mut self, executions: u64) -> Option<Start> {
        self.steps = 0;
        match self.phase {
            // Only that opening: once it is finished, `opening` moved on.
            Some(Phase::Opening(i)) if self.opening != i => return None,
            Some(Phase::Opening(_)) => return self.begin_this_opening(),
            Some(Phase::Sampling { .. }) => return self.begin_sampling(executions),
            None => {}
        }
        if self.opening < self.openings.len() {
            if let Some(start) = self.begin_opening() {
                self.openings_end = executions + 1;
                return Some(start);
            }
            if self.complete {
                return None;
            }
        }
        let from = match self.sampling_from {
            Some(from) => from,
            None => {
                self.fix_length_estimate(self.longest);
                // Right after the last opening execution: in a partition,
                // `executions` may already be past another's first index.
                *self.sampling_from.insert(self.openings_end)
            }
        };
        self.begin_sampling(executions - from)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let d = self.member().strategy.decide(ctx);
        if d.is_some() {
            self.steps = ctx.step + 1;
        }
        d
    }

    fn observe(&mut self, step: &StepInfo) {
        self.member().strategy.observe(step)
    }

    fn end(&mut self, outcome: &Outcome) {
        if self.current.is_none() {
            self.longest = self.longest.max(self.steps);
        }
        self.member().strategy.end(outcome)
    }

    /// In phases for threads when every sampling member splits by
    /// execution in single blocks (its execution `i` depends on `i`
    /// alone): the openings run alone anyway; by execution once restricted
    /// to the sampling phase. For partitions, the openings' executions, at
    /// most, are a prologue every partition runs (the sampling phase may
    /// begin inside it, if the openings end sooner; its executions there
    /// are run by every partition too, and counted once). States are
    /// hashed as the current member asks.
    fn profile(&self) -> Profile {
        let split = self.split();
        Profile {
            split,
            blocks: match (split, self.phase) {
                (Split::Phases, None) => {
                    Blocks::Prologue(self.openings.iter().map(|o| o.round).sum())
                }
                _ => Blocks::Single,
            },
            hashes_states: self
                .member_ref()
                .is_some_and(|m| m.strategy.profile().hashes_states),
        }
    }

    /// The portfolio's own seed, exhaustion and bound, the counters of
    /// the opening member that explored its whole space, if one did (they
    /// say what the proof covered), the current member's name, and the
    /// longest opening execution.
    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: self.seed,
            exhausted: self.complete,
            bound_hit: match self.openings.get(self.opening) {
                Some(o) => o.strategy.standing().bound_hit,
                None => self.bound_hit.clone(),
            },
            stats: self.complete_stats.clone(),
            active: Some(
                self.member_ref()
                    .map(|m| m.strategy.name())
                    .unwrap_or("portfolio"),
            ),
            longest: self.longest,
            ..Standing::default()
        }
    }

    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        self.member().strategy.observe_state(hash)
    }

    fn save_request(&mut self) -> Option<u64> {
        // Ids are the member's own: two members could pick the same id, and
        // a member's saved state is only started by that member. Members
        // that save belong in the opening slot, which runs alone.
        self.member().strategy.save_request()
    }

    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        Some(self)
    }
}

/// The split of [`Portfolio::profile`](Strategy::profile).
impl Portfolio {
    fn split(&self) -> Split {
        // Execution `i` of each member on `i` alone: split by execution,
        // in blocks of one (no prologue, no samples of several).
        let sampling = self.members.iter().all(|m| {
            let profile = m.strategy.profile();
            profile.split == Split::ByExecution && profile.blocks == Blocks::Single
        });
        match (sampling, self.phase) {
            (false, _) => Split::None,
            // The sampling phase alone splits as its members do.
            (true, Some(Phase::Sampling { .. })) => Split::ByExecution,
            (true, _) => Split::Phases,
        }
    }
}

/// In phases: one phase at a time, each set up before its first `begin`.
impl Splitting for Portfolio {
    fn take_role(&mut self, role: Role) -> bool {
        let Role::Phase(phase) = role else {
            return false;
        };
        self.phase = Some(phase);
        match phase {
            Phase::Opening(i) => self.opening = i.min(self.openings.len()),
            Phase::Sampling { longest } => {
                self.opening = self.openings.len();
                self.fix_length_estimate(longest);
            }
        }
        true
    }

    fn openings(&self) -> Option<Vec<u64>> {
        Some(self.openings.iter().map(|o| o.round).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::partition::lowest_bug_sampled_apart;
    use crate::model::ModelBuilder;
    use crate::strategies::{Dfs, Pct, RandomWalk, Recording};
    use crate::{Config, Explorer};

    /// Two threads each increment `x` with a separate read and write; main
    /// joins both and asserts `x == 2`: one preemption loses an update.
    fn lost_update() -> crate::model::Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let worker = b.thread("worker", |t| {
            t.read(x, 0).write(x, crate::model::reg(0) + 1);
        });
        b.main(|t| {
            t.spawn(worker, 0)
                .spawn(worker, 1)
                .join(crate::model::reg(0))
                .join(crate::model::reg(1));
            t.read(x, 2)
                .assert(crate::model::reg(2).equals(2), "lost update");
        });
        b.build().unwrap()
    }

    #[test]
    fn opening_dfs_finds_the_bug_and_is_named() {
        let mut p = Portfolio::new(
            Some((Box::new(Dfs::with_preemption_bound(2)), 1000)),
            vec![(Box::new(RandomWalk::new(1)), 10)],
            1,
        );
        let report = Explorer::new(lost_update(), Config::default())
            .run(&mut p)
            .unwrap();
        assert_eq!(report.first_bug().unwrap().found_by, "dfs");
    }

    #[test]
    fn samplers_take_over_after_a_bounded_opening_and_take_turns() {
        // Preemption bound 0 cannot find the lost update; the random
        // members must, and the report names the one that did.
        let members: Vec<(Box<dyn Strategy>, u64)> = vec![
            (Box::new(RandomWalk::new(7)), 3),
            (Box::new(RandomWalk::new(8)), 3),
        ];
        let mut p = Recording::new(Portfolio::new(
            Some((Box::new(Dfs::with_preemption_bound(0)), 50)),
            members,
            7,
        ));
        let report = p
            .run(&mut Explorer::new(lost_update(), Config::default()))
            .unwrap();
        let bug = report.first_bug().expect("a sampler finds it");
        assert_eq!(bug.found_by, "random");
        let opening = p
            .executions()
            .iter()
            .filter(|e| e.start == Start::Fresh)
            .count();
        assert!(opening >= 1);
        assert!(
            report.executions > 3,
            "the bounded DFS ran first: {}",
            report.executions
        );
    }

    #[test]
    fn the_default_opens_with_dpor_and_ends_with_a_proof() {
        // Two unlocked increments in a lock: bug-free, a few traces.
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let m = b.mutex("m");
        let worker = b.thread("worker", |t| {
            t.lock(m)
                .read(x, 0)
                .write(x, crate::model::reg(0) + 1)
                .unlock(m);
        });
        b.main(|t| {
            t.spawn(worker, 0)
                .spawn(worker, 1)
                .join(crate::model::reg(0))
                .join(crate::model::reg(1));
        });
        let model = b.build().unwrap();
        let mut p = default_portfolio(Some(2), 0);
        let report = Explorer::new(model, Config::default()).run(&mut p).unwrap();
        assert!(report.exhausted && report.bugs.is_empty());
        assert_eq!(report.executions, 2, "one per trace: who locks first");
        let stat = |n: &str| {
            report
                .strategy_stats
                .iter()
                .find(|s| s.name == n)
                .map(|s| s.value)
        };
        assert_eq!(stat("traces"), Some(2));
        // And a bug is found by the DPOR opening.
        let report = Explorer::new(lost_update(), Config::default())
            .run(&mut default_portfolio(Some(2), 0))
            .unwrap();
        assert_eq!(report.first_bug().unwrap().found_by, "dpor");
    }

    #[test]
    fn a_spent_opening_hands_over_to_the_next() {
        // DPOR with a budget of 1 cannot exhaust the lost update's traces
        // nor find its bug (its first run is sequential); the DFS after it
        // starts afresh and does.
        let openings: Vec<(Box<dyn Strategy>, u64)> = vec![
            (Box::new(Dpor::optimal()), 1),
            (Box::new(Dfs::with_preemption_bound(2)), 1000),
        ];
        let mut p = Portfolio::with_openings(openings, vec![], 1);
        let report = Explorer::new(lost_update(), Config::default())
            .run(&mut p)
            .unwrap();
        assert_eq!(report.first_bug().unwrap().found_by, "dfs");
        assert!(report.executions > 1);
    }

    /// The phases run apart (each opening alone, then the sampling phase
    /// in 1, 2 or 3 partitions, as `check --jobs` runs them) add up to the
    /// whole run: the openings' executions, then the sampling phase's
    /// lowest failing index is the whole run's bug, with its schedule.
    #[test]
    fn the_phases_run_apart_add_up_to_the_whole_run() {
        let build = || {
            let openings: Vec<(Box<dyn Strategy>, u64)> = vec![
                (Box::new(Dfs::with_preemption_bound(0)), 5),
                (Box::new(Dfs::with_preemption_bound(0)), 1),
            ];
            let members: Vec<(Box<dyn Strategy>, u64)> = vec![
                (Box::new(Pct::new(3, 3).with_length_estimate(50, false)), 2),
                (Box::new(RandomWalk::new(3)), 3),
            ];
            Portfolio::with_openings(openings, members, 3)
        };
        assert_eq!(build().profile().split, Split::Phases);
        let run = |p: &mut Portfolio, config: Config| {
            Explorer::new(lost_update(), config).run(p).unwrap()
        };
        let whole = run(&mut build(), Config::default());
        let bug = whole.first_bug().expect("a sampler finds the lost update");
        let (mut used, mut longest) = (0, 0);
        for i in 0..2 {
            let mut p = build();
            assert!(p.take_role(Role::Phase(Phase::Opening(i))));
            let r = run(&mut p, Config::default());
            assert!(r.bugs.is_empty() && !r.exhausted, "opening {i}: {r:?}");
            used += r.executions;
            longest = longest.max(p.standing().longest);
        }
        assert!(used > 2, "the bounded dfs ran: {used}");
        for n in 1..=3 {
            let lowest = lowest_bug_sampled_apart(n, longest, build, run);
            assert_eq!(used + lowest.execution, bug.execution, "{n} partitions");
            assert_eq!(lowest.schedule, bug.schedule);
            assert_eq!(lowest.found_by, bug.found_by);
        }
    }

    #[test]
    fn a_complete_opening_ends_the_portfolio_as_exhausted() {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        b.main(|t| {
            t.write(x, 1);
        });
        let model = b.build().unwrap();
        let mut p = Portfolio::new(
            Some((Box::new(Dfs::unbounded()), 1000)),
            vec![(Box::new(RandomWalk::new(1)), 10)],
            1,
        );
        let report = Explorer::new(model, Config::default()).run(&mut p).unwrap();
        assert!(report.exhausted);
        assert_eq!(report.executions, 1);
    }
}
