//! High-level entry points for the CLI and embedders: explore a test with a
//! strategy and, on a bug, replay it with tracing to produce a readable
//! interleaving and a schedule file; replay a schedule file exactly.

use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;

mod jobs;
mod phases;
mod rounds;
mod threads;
pub use jobs::{check_jobs, check_jobs_with_progress};
use wasmrace_explore::strategies::descriptor::{Descriptor, StrategyOptions};
use wasmrace_explore::strategies::registry;
use wasmrace_explore::strategies::{Divergence, Replay};
use wasmrace_explore::{Config, ExploreError, Explorer, Program, Report, Status, Strategy};
use wasmrace_trace::{Decision, Failure, Schedule, ScheduleStep, TraceEvent};

/// Which strategy `check` runs: a registered strategy
/// ([`registry`](wasmrace_explore::strategies::registry)) with its options,
/// resolved (the defaults filled in, options it does not take dropped), so
/// that two choices that run alike compare equal.
#[derive(Clone)]
pub struct StrategyChoice {
    descriptor: &'static Descriptor,
    options: StrategyOptions,
}

impl PartialEq for StrategyChoice {
    fn eq(&self, other: &Self) -> bool {
        self.descriptor.name == other.descriptor.name && self.options == other.options
    }
}

impl Eq for StrategyChoice {}

impl std::fmt::Debug for StrategyChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyChoice")
            .field("name", &self.descriptor.name)
            .field("options", &self.options)
            .finish()
    }
}

/// The strategy names the CLI accepts, in the order `--help` lists them.
pub const STRATEGY_NAMES: &[&str] = registry::NAMES;

impl StrategyChoice {
    /// `descriptor`'s strategy with `given` where set and its defaults
    /// elsewhere.
    pub fn new(descriptor: &'static Descriptor, given: &StrategyOptions) -> Self {
        StrategyChoice {
            descriptor,
            options: descriptor.resolve(given),
        }
    }

    /// The strategy called `name` (one of [`STRATEGY_NAMES`]) with the
    /// parameters `wasmrace check` uses when given no other flags; `None`
    /// for an unknown name. `wasmrace bench` selects strategies this way, so
    /// a registered strategy is benchmarked too.
    pub fn from_name(name: &str) -> Option<Self> {
        registry::find(name).map(|d| Self::new(d, &StrategyOptions::NONE))
    }

    /// The built-in strategy called `name`, with its defaults.
    ///
    /// # Panics
    ///
    /// If no strategy is called `name`; [`from_name`](Self::from_name)
    /// returns `None` instead.
    pub fn named(name: &str) -> Self {
        Self::from_name(name).unwrap_or_else(|| panic!("no strategy is called `{name}`"))
    }

    /// This strategy with `given`'s options where set, its own elsewhere.
    pub fn with(&self, given: &StrategyOptions) -> Self {
        Self::new(self.descriptor, &given.or(&self.options))
    }

    /// The strategy's descriptor.
    pub fn descriptor(&self) -> &'static Descriptor {
        self.descriptor
    }

    /// The options it runs with, resolved.
    pub fn options(&self) -> &StrategyOptions {
        &self.options
    }

    /// Its name, as in reports and schedule files (`dfs`, `pos-star`).
    pub fn name(&self) -> &'static str {
        self.descriptor.name
    }

    /// The strategy and the options that shape it, for report headers
    /// (`dfs, preemption bound 2`).
    pub fn describe(&self, seed: u64) -> String {
        (self.descriptor.describe)(&self.options, seed)
    }

    /// SES with the run-to-completion explorer (the paper's best at deep
    /// bugs), no delay bound and a 256 MiB cache.
    pub fn default_ses() -> Self {
        Self::named("ses")
    }

    /// SS with the run-to-completion explorer, `c1 = 10`, `c2 = 3`.
    pub fn default_ss() -> Self {
        Self::named("ss")
    }

    /// The portfolio as `wasmrace check` runs it by default.
    pub fn default_portfolio() -> Self {
        Self::new(registry::default_descriptor(), &StrategyOptions::NONE)
    }

    /// Builds the strategy, seeded, for embedders who drive an `Explorer`
    /// themselves.
    pub fn build(&self, seed: u64) -> Box<dyn Strategy> {
        (self.descriptor.build)(&self.options, seed)
    }
}

/// How [`check`] explores a test: the strategy, its seed and the
/// explorer's bounds. The default is what `wasmrace check` runs with no
/// options.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// The strategy. Default: the portfolio.
    pub strategy: StrategyChoice,
    /// Seeds the strategy's random choices (unused by systematic ones); the
    /// same seed and options give the same exploration. Default 0.
    pub seed: u64,
    /// The explorer's bounds and snapshot policy.
    pub explore: Config,
}

impl Default for CheckOptions {
    /// The portfolio (DFS with a preemption bound of 2 for 1,000
    /// executions, then POS, PCT and random walk in turns), seed 0, the
    /// explorer's default bounds.
    fn default() -> Self {
        CheckOptions {
            strategy: StrategyChoice::default_portfolio(),
            seed: 0,
            explore: Config::default(),
        }
    }
}

impl CheckOptions {
    /// The options that shaped the exploration, recorded in schedule files:
    /// `preemption_bound` (null for strategies without one), the explorer's
    /// bounds, and the strategy's other options.
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::Map::new();
        json.insert("preemption_bound".into(), serde_json::Value::Null);
        json.insert("max_steps".into(), self.explore.max_steps.into());
        json.insert("max_executions".into(), self.explore.max_executions.into());
        json.extend((self.strategy.descriptor.options_json)(
            &self.strategy.options,
        ));
        serde_json::Value::Object(json)
    }
}

/// A bug with everything needed to understand and reproduce it.
#[derive(Clone, Debug)]
pub struct BugReport {
    /// What went wrong.
    pub failure: Failure,
    /// The strategy that found it (a portfolio names its member).
    pub found_by: String,
    /// The failing interleaving, step by step.
    pub trace: Vec<TraceEvent>,
    /// The schedule file contents that replay it.
    pub schedule: Schedule,
    /// 1-based index of the execution that found it.
    pub execution: u64,
    /// The size of the schedule the strategy found, when the one above is
    /// its shrunk form ([`shrink_bug`](crate::shrink_bug)); `None` when it
    /// is the strategy's own.
    pub shrunk_from: Option<crate::ScheduleStats>,
}

/// What [`check`] did and found.
#[derive(Clone, Debug)]
pub struct CheckOutcome {
    /// The test explored.
    pub test: String,
    /// The strategy's name (`portfolio`, `dfs`, ...).
    pub strategy: String,
    /// The seed it ran with.
    pub seed: u64,
    /// The explorer's report: executions, bounds hit, counters.
    pub report: Report,
    /// The first bug, traced and with its schedule; `None` if none was
    /// found.
    pub bug: Option<BugReport>,
    /// Real races RaceFuzzer created (empty for other strategies).
    pub races: Vec<RaceReport>,
    /// Under `--data-races report`: the distinct data races on plain
    /// memory the run met (empty otherwise).
    pub data_races: crate::hooks::races::ReportedRaces,
    /// Why the test had no interleavings to explore, when it had none: a
    /// pass then means less than usual, and reports say so.
    pub nothing_to_interleave: Option<NothingToInterleave>,
}

/// Why a test had no interleavings to explore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NothingToInterleave {
    /// The test returned without reaching a scheduling point (no SDK
    /// operation that suspends).
    NoSchedulingPoint,
    /// The test spawned no thread: only its `choose` alternatives, if it
    /// has any, were explored.
    NoThread,
}

impl NothingToInterleave {
    /// Why, in words: `the test spawned no thread`.
    pub fn reason(self) -> &'static str {
        match self {
            NothingToInterleave::NoSchedulingPoint => "the test ran no scheduling point",
            NothingToInterleave::NoThread => "the test spawned no thread",
        }
    }

    fn of(program: &WasmProgram) -> Option<Self> {
        if !program.reached_a_scheduling_point() {
            Some(NothingToInterleave::NoSchedulingPoint)
        } else if !program.spawned_a_thread() {
            Some(NothingToInterleave::NoThread)
        } else {
            None
        }
    }
}

/// A real race: two statements RaceFuzzer brought to the same object at
/// the same time, with conflicting accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceReport {
    /// The two statements, as `file:line:col` where the guest tells us.
    pub sites: (String, String),
    /// The object they race on (`cell main#0`).
    pub object: String,
    /// Times the race was created, and in how many executions.
    pub count: u64,
    /// Executions in which it was created.
    pub executions: u64,
    /// 1-based execution that created it first.
    pub first_execution: u64,
    /// The two sites and the object as the strategy numbers them: the
    /// order races are listed in, and what partitions' races merge by
    /// (`wasmrace merge`).
    pub key: (u64, u64, u64),
}

fn explore_err(e: ExploreError<HostError>) -> HostError {
    match e {
        ExploreError::Program(h) => h,
        other => HostError::Runtime {
            message: other.to_string(),
        },
    }
}

/// Explores `test` with the chosen strategy.
pub fn check(guest: &Guest, test: &str, opts: &CheckOptions) -> Result<CheckOutcome, HostError> {
    check_with_progress(guest, test, opts, &mut |_| {})
}

/// Explores `test` with a strategy the caller built, for strategies
/// [`StrategyChoice`] cannot name: SES or SS with a custom
/// [`DelayingExplorer`](wasmrace_explore::strategies::DelayingExplorer),
/// say. `opts.explore` bounds the run; `opts.seed` and `opts.to_json()` go
/// into the schedule file of a bug, under the strategy's own name (its seed
/// is the caller's business); `opts.strategy` is not used.
///
/// ```no_run
/// use wasmrace_host::{CheckOptions, Guest, HostConfig};
/// use wasmrace_host::strategies::{RunToCompletion, Ses, SesOptions};
/// let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
/// let mut ses = Ses::new(RunToCompletion::new(), 0, SesOptions::default());
/// let out = wasmrace_host::check_with_strategy(
///     &guest, "two_phase_commit", &CheckOptions::default(), &mut ses, &mut |_| {})?;
/// println!("{} states explored", ses.states_explored());
/// # Ok::<(), wasmrace_host::HostError>(())
/// ```
pub fn check_with_strategy(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    strategy: &mut dyn Strategy,
    progress: &mut dyn FnMut(&Report),
) -> Result<CheckOutcome, HostError> {
    let program = guest.program(test)?;
    let mut explorer = Explorer::new(program, opts.explore.clone());
    let report = explorer
        .run_with_progress(strategy, progress)
        .map_err(explore_err)?;
    let name = strategy.name().to_string();
    finish_check(guest, test, opts, explorer, report, name)
}

/// Like [`check`], calling `progress` after every execution.
pub fn check_with_progress(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    progress: &mut dyn FnMut(&Report),
) -> Result<CheckOutcome, HostError> {
    let program = guest.program(test)?;
    let mut explorer = Explorer::new(program, opts.explore.clone());
    let mut strategy = opts.strategy.build(opts.seed);
    let report = explorer
        .run_with_progress(&mut *strategy, progress)
        .map_err(explore_err)?;
    let strategy_name = strategy.name().to_string();
    finish_check(guest, test, opts, explorer, report, strategy_name)
}

/// The outcome of an exploration: real races named, the first bug traced
/// and turned into a schedule file.
fn finish_check(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    mut explorer: Explorer<WasmProgram>,
    report: Report,
    strategy_name: String,
) -> Result<CheckOutcome, HostError> {
    let races = (report.real_races.iter())
        .map(|r| {
            let mut name = |s: u64| {
                explorer
                    .program
                    .describe_site(s)
                    .unwrap_or_else(|| format!("site {s:#x}"))
            };
            let sites = (name(r.sites.0), name(r.sites.1));
            RaceReport {
                sites,
                object: explorer.program.describe_object(r.obj),
                count: r.count,
                executions: r.executions,
                first_execution: r.first_execution,
                key: (r.sites.0, r.sites.1, r.obj.0),
            }
        })
        .collect();
    let bug = match report.first_bug() {
        Some(b) => {
            let (trace, _) = trace_schedule(&mut explorer.program, &b.schedule)?;
            let steps = schedule_steps(&explorer.program, &b.schedule);
            let mut schedule = Schedule::new(
                guest.module_hash().to_string(),
                test.to_string(),
                strategy_name.clone(),
                opts.seed,
                opts.to_json(),
                Some(b.failure.clone()),
                steps,
            );
            schedule.settings = guest.config().schedule_settings(opts.explore.max_steps);
            Some(BugReport {
                failure: b.failure.clone(),
                found_by: b.found_by.clone(),
                trace,
                schedule,
                execution: b.execution,
                shrunk_from: None,
            })
        }
        None => None,
    };
    Ok(CheckOutcome {
        nothing_to_interleave: NothingToInterleave::of(&explorer.program),
        test: test.into(),
        strategy: strategy_name,
        seed: opts.seed,
        report,
        bug,
        races,
        data_races: explorer.program.take_races().reported(),
    })
}

fn schedule_steps(program: &WasmProgram, decisions: &[Decision]) -> Vec<ScheduleStep> {
    decisions
        .iter()
        .map(|d| ScheduleStep {
            thread: program.thread_name(d.tid),
            alt: d.alt,
        })
        .collect()
}

/// Runs `decisions` from a fresh start with tracing on; returns the trace
/// and the status after the last decision. The program is left at that point.
pub fn trace_schedule(
    program: &mut WasmProgram,
    decisions: &[Decision],
) -> Result<(Vec<TraceEvent>, Status), HostError> {
    program.set_tracing(true);
    let result = (|| {
        program.reset()?;
        for &d in decisions {
            if !matches!(program.status(), Status::Running) {
                break;
            }
            program.step(d)?;
        }
        Ok((program.take_trace(), program.status().clone()))
    })();
    program.set_tracing(false);
    result
}

/// What replaying a schedule file did.
#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    /// The failure the schedule led to, if it did.
    pub failure: Option<Failure>,
    /// The interleaving replayed, step by step.
    pub trace: Vec<TraceEvent>,
    /// Where the schedule stopped fitting the program, if it did.
    pub divergence: Option<Divergence>,
    /// Steps replayed.
    pub steps: usize,
}

impl ReplayOutcome {
    /// The failure recorded in the file came back, identical (its hint
    /// aside: a file written before the host knew a hint still matches).
    pub fn reproduces(&self, schedule: &Schedule) -> bool {
        let without_hint = |f: &Option<Failure>| {
            f.clone().map(|mut f| {
                f.hint = None;
                f
            })
        };
        self.failure.is_some() && without_hint(&self.failure) == without_hint(&schedule.failure)
    }
}

/// Replays a schedule file against `guest`, refusing one recorded on another
/// module or for a test the module does not have.
pub fn replay(
    guest: &Guest,
    schedule: &Schedule,
    max_steps: u64,
) -> Result<ReplayOutcome, HostError> {
    if schedule.module_blake3 != guest.module_hash() {
        return Err(HostError::ScheduleModule {
            name: guest.name().into(),
            expected: schedule.module_blake3.clone(),
            found: guest.module_hash().into(),
        });
    }
    let mut program = guest.program(&schedule.test)?;
    program.set_tracing(true);
    let mut strategy = Replay::from_schedule(schedule);
    // The schedule's decisions were each schedulable when recorded, fair
    // or not: a replay takes them as they are, whatever fairness bound
    // found them (yields are still counted, so a livelock is one again).
    let config = Config {
        max_executions: 1,
        max_steps,
        snapshot_every_cost: None,
        fairness_bound: None,
        ..Config::default()
    };
    let mut explorer = Explorer::new(program, config);
    let report = explorer.run(&mut strategy).map_err(explore_err)?;
    let failure = report.first_bug().map(|b| b.failure.clone());
    let trace = explorer.program.take_trace();
    Ok(ReplayOutcome {
        failure,
        trace,
        divergence: strategy.divergence().cloned(),
        steps: strategy.replayed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's default is what `wasmrace check` runs with no flags:
    /// the portfolio, opening with DFS bounded at 2 preemptions.
    #[test]
    fn the_default_options_are_the_clis_portfolio() {
        let opts = CheckOptions::default();
        assert_eq!(opts.strategy, StrategyChoice::default_portfolio());
        assert_eq!(
            opts.strategy,
            StrategyChoice::from_name("portfolio").unwrap()
        );
        assert_eq!(opts.strategy.name(), "portfolio");
        assert_eq!(opts.to_json()["preemption_bound"], 2);
    }

    /// Every registered strategy's report header and schedule-file options,
    /// as the per-strategy code before the registry wrote them.
    #[test]
    fn headers_and_options_json_are_unchanged() {
        let cases = [
            (
                "portfolio",
                "portfolio: dpor, then dfs with preemption bound 2, then pos, pct, random; seed 5",
                r#""preemption_bound":2"#,
            ),
            ("dfs", "dfs, preemption bound 2", r#""preemption_bound":2"#),
            ("random", "random, seed 5", r#""preemption_bound":null"#),
            ("pct", "pct, depth 3, seed 5", r#""preemption_bound":null"#),
            (
                "basic-pos",
                "basic-pos, seed 5",
                r#""preemption_bound":null"#,
            ),
            ("pos", "pos, seed 5", r#""preemption_bound":null"#),
            ("pos-star", "pos-star, seed 5", r#""preemption_bound":null"#),
            (
                "racefuzzer",
                "racefuzzer, seed 5",
                r#""preemption_bound":null"#,
            ),
            (
                "procrastination",
                "procrastination, seed 5",
                r#""preemption_bound":null"#,
            ),
            (
                "ses",
                "ses, explorer rtc, no delay bound, state cache 256 MiB",
                r#""cache_mb":256,"delay_bound":null,"explorer":"rtc","preemption_bound":null"#,
            ),
            (
                "dpor",
                "dpor, optimal, unbounded",
                r#""dpor":"optimal","preemption_bound":null"#,
            ),
            (
                "ss",
                "ss, explorer rtc, 10 x 3^delays samples per delay bound, seed 5",
                r#""c1":10,"c2":3,"explorer":"rtc","preemption_bound":null"#,
            ),
        ];
        assert_eq!(cases.map(|c| c.0), STRATEGY_NAMES);
        for (name, header, json) in cases {
            let opts = CheckOptions {
                strategy: StrategyChoice::named(name),
                explore: Config {
                    max_executions: 7,
                    max_steps: 9,
                    ..Config::default()
                },
                ..CheckOptions::default()
            };
            assert_eq!(opts.strategy.describe(5), header);
            let expected = format!(r#"{{"max_executions":7,"max_steps":9,{json}}}"#);
            let expected: serde_json::Value = serde_json::from_str(&expected).unwrap();
            assert_eq!(opts.to_json(), expected, "{name}");
        }
    }

    /// Options set on a choice override its defaults; options its strategy
    /// does not take are dropped, so equal runs compare equal.
    #[test]
    fn options_resolve_against_the_strategys_defaults() {
        let cached = StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(None),
            state_cache: Some(true),
            cache_mb: Some(3),
            depth: Some(4),
            ..StrategyOptions::NONE
        });
        assert_eq!(cached.describe(0), "dfs, unbounded, state cache 3 MiB");
        assert_eq!(cached.options().depth, None);
        let opts = CheckOptions {
            strategy: cached,
            ..CheckOptions::default()
        };
        assert_eq!(opts.to_json()["state_cache_mb"], 3);
        assert_eq!(opts.to_json()["preemption_bound"], serde_json::Value::Null);
        let prr = StrategyChoice::named("ses").with(&StrategyOptions {
            explorer: Some(wasmrace_explore::ExplorerKind::ProbabilisticRoundRobin),
            delay_bound: Some(Some(2)),
            ..StrategyOptions::NONE
        });
        assert_eq!(
            prr.describe(3),
            "ses, explorer prr, delay bound 2, state cache 256 MiB, seed 3"
        );
        assert_eq!(
            StrategyChoice::named("pct").with(&StrategyOptions {
                c1: Some(4),
                ..StrategyOptions::NONE
            }),
            StrategyChoice::named("pct")
        );
        assert_eq!(StrategyChoice::from_name("dfs-ish"), None);
    }
}
