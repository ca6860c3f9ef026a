//! High-level entry points for the CLI and embedders: explore a test with a
//! strategy and, on a bug, replay it with tracing to produce a readable
//! interleaving and a schedule file; replay a schedule file exactly.

use crate::error::HostError;
use crate::guest::Guest;
use crate::program::WasmProgram;
use wasmrace_explore::strategies::{
    BasicPos, Dfs, DfsOptions, Divergence, ExplorerKind, Pct, Portfolio, Pos, PosStar,
    Procrastination, RaceFuzzer, RandomWalk, RealRace, Replay, Ses, SesOptions, Ss, SsOptions,
};
use wasmrace_explore::{Config, ExploreError, Explorer, Program, Report, Status, Strategy};
use wasmrace_trace::{Decision, Failure, Schedule, ScheduleStep, TraceEvent};

/// Which strategy `check` runs.
#[allow(missing_docs)] // being replaced by the strategy registry
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StrategyChoice {
    /// Concuerror-style DFS (Algorithm 1) with iterative preemption bounding
    /// and blocking avoidance; `None` explores every interleaving.
    Dfs { preemption_bound: Option<u32> },
    /// Uniform random walk among enabled threads, seeded.
    Random,
    /// PCT with `depth` priority change points (ASPLOS 2010).
    Pct { depth: u32 },
    /// Partial-order sampling with fixed priorities (CAV 2018).
    BasicPos,
    /// POS: priorities of events racing with the executed one are redrawn.
    Pos,
    /// POS*: as POS, but reads do not race with reads.
    PosStar,
    /// RaceFuzzer: a hybrid race detector, then race-directed scheduling
    /// (PLDI 2008). Real races are reported even when nothing fails.
    RaceFuzzer,
    /// PULSE procrastination (Erlang 2011), first order.
    Procrastination,
    /// The default: DFS with iterative preemption bounding for
    /// `opening_executions` executions, then POS, PCT and random walk in
    /// turns of 100 executions until the budget is spent.
    Portfolio {
        preemption_bound: Option<u32>,
        opening_executions: u64,
    },
    /// Stratified exhaustive search with a delaying explorer (FSE 2015,
    /// Fig. 5): every execution with 0 delays, then 1, ..., up to
    /// `delay_bound` (`None`: until nothing is left), pruning states already
    /// explored with a cache of at most `cache_mb` MiB of state hashes.
    Ses {
        explorer: ExplorerKind,
        delay_bound: Option<u32>,
        cache_mb: u64,
    },
    /// Stratified sampling with a delaying explorer (FSE 2015, Fig. 7):
    /// `c1 · c2^db` samples with `db` delays at uniform positions, for
    /// `db = 0, 1, ...` until the budget is spent.
    Ss {
        explorer: ExplorerKind,
        c1: u64,
        c2: u64,
    },
    /// [`Dfs`](StrategyChoice::Dfs) with a state cache of at most
    /// `cache_mb` MiB (`--state-cache`): a state already explored is not
    /// explored again. Reported as `dfs`.
    DfsStateCache {
        preemption_bound: Option<u32>,
        cache_mb: u64,
    },
}

/// The strategy names the CLI accepts, in the order `--help` lists them.
pub const STRATEGY_NAMES: &[&str] = &[
    "portfolio",
    "dfs",
    "random",
    "pct",
    "basic-pos",
    "pos",
    "pos-star",
    "racefuzzer",
    "procrastination",
    "ses",
    "ss",
];

impl StrategyChoice {
    /// The name the CLI accepts and reports show (`dfs`, `pos`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            StrategyChoice::Dfs { .. } => "dfs",
            StrategyChoice::Random => "random",
            StrategyChoice::Pct { .. } => "pct",
            StrategyChoice::BasicPos => "basic-pos",
            StrategyChoice::Pos => "pos",
            StrategyChoice::PosStar => "pos-star",
            StrategyChoice::RaceFuzzer => "racefuzzer",
            StrategyChoice::Procrastination => "procrastination",
            StrategyChoice::Portfolio { .. } => "portfolio",
            StrategyChoice::Ses { .. } => "ses",
            StrategyChoice::Ss { .. } => "ss",
            StrategyChoice::DfsStateCache { .. } => "dfs",
        }
    }

    /// SES with the run-to-completion explorer (the paper's best at deep
    /// bugs), no delay bound and a 256 MiB cache.
    pub fn default_ses() -> Self {
        let o = SesOptions::default();
        StrategyChoice::Ses {
            explorer: ExplorerKind::RunToCompletion,
            delay_bound: o.delay_bound,
            cache_mb: o.cache_mb,
        }
    }

    /// SS with the run-to-completion explorer, `c1 = 10`, `c2 = 3`.
    pub fn default_ss() -> Self {
        let o = SsOptions::default();
        StrategyChoice::Ss {
            explorer: ExplorerKind::RunToCompletion,
            c1: o.c1,
            c2: o.c2,
        }
    }

    /// The portfolio as `wasmrace check` runs it by default.
    pub fn default_portfolio() -> Self {
        StrategyChoice::Portfolio {
            preemption_bound: Some(2),
            opening_executions: 1000,
        }
    }

    /// The strategy called `name` (one of [`STRATEGY_NAMES`]) with the
    /// parameters `wasmrace check` uses when given no other flags; `None`
    /// for an unknown name. `wasmrace bench` selects strategies this way, so
    /// a strategy added here and to `STRATEGY_NAMES` is benchmarked too.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "portfolio" => StrategyChoice::default_portfolio(),
            "dfs" => StrategyChoice::Dfs {
                preemption_bound: Some(2),
            },
            "random" => StrategyChoice::Random,
            "pct" => StrategyChoice::Pct {
                depth: Pct::DEFAULT_DEPTH,
            },
            "basic-pos" => StrategyChoice::BasicPos,
            "pos" => StrategyChoice::Pos,
            "pos-star" => StrategyChoice::PosStar,
            "racefuzzer" => StrategyChoice::RaceFuzzer,
            "procrastination" => StrategyChoice::Procrastination,
            "ses" => StrategyChoice::default_ses(),
            "ss" => StrategyChoice::default_ss(),
            _ => return None,
        })
    }

    /// Builds the strategy, seeded, for embedders who drive an `Explorer`
    /// themselves.
    pub fn build(&self, seed: u64) -> Box<dyn Strategy> {
        match self {
            StrategyChoice::Dfs { preemption_bound } => Box::new(Dfs::new(DfsOptions {
                preemption_bound: *preemption_bound,
            })),
            StrategyChoice::Random => Box::new(RandomWalk::new(seed)),
            StrategyChoice::Pct { depth } => Box::new(Pct::new(seed, *depth)),
            StrategyChoice::BasicPos => Box::new(BasicPos::new(seed)),
            StrategyChoice::Pos => Box::new(Pos::new(seed)),
            StrategyChoice::PosStar => Box::new(PosStar::new(seed)),
            StrategyChoice::RaceFuzzer => Box::new(RaceFuzzer::new(seed)),
            StrategyChoice::Procrastination => Box::new(Procrastination::new(seed)),
            StrategyChoice::Portfolio {
                preemption_bound,
                opening_executions,
            } => {
                let opening: Box<dyn Strategy> = Box::new(Dfs::new(DfsOptions {
                    preemption_bound: *preemption_bound,
                }));
                let members: Vec<(Box<dyn Strategy>, u64)> = vec![
                    (Box::new(Pos::new(seed)), 100),
                    (Box::new(Pct::new(seed, Pct::DEFAULT_DEPTH)), 100),
                    (Box::new(RandomWalk::new(seed)), 100),
                ];
                Box::new(Portfolio::new(
                    Some((opening, *opening_executions)),
                    members,
                    seed,
                ))
            }
            StrategyChoice::Ses {
                explorer,
                delay_bound,
                cache_mb,
            } => Box::new(Ses::new(
                explorer.build(seed),
                seed,
                SesOptions {
                    delay_bound: *delay_bound,
                    cache_mb: *cache_mb,
                },
            )),
            StrategyChoice::Ss { explorer, c1, c2 } => Box::new(Ss::new(
                explorer.build(seed),
                seed,
                SsOptions { c1: *c1, c2: *c2 },
            )),
            StrategyChoice::DfsStateCache {
                preemption_bound,
                cache_mb,
            } => Box::new(
                Dfs::new(DfsOptions {
                    preemption_bound: *preemption_bound,
                })
                .with_state_cache(*cache_mb),
            ),
        }
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
    /// The options that shaped the exploration, recorded in schedule files.
    pub fn to_json(&self) -> serde_json::Value {
        let bound = match &self.strategy {
            StrategyChoice::Dfs { preemption_bound }
            | StrategyChoice::DfsStateCache {
                preemption_bound, ..
            }
            | StrategyChoice::Portfolio {
                preemption_bound, ..
            } => {
                serde_json::json!(preemption_bound)
            }
            _ => serde_json::Value::Null,
        };
        let mut json = serde_json::json!({
            "preemption_bound": bound,
            "max_steps": self.explore.max_steps,
            "max_executions": self.explore.max_executions,
        });
        // Options of the strategies that have them, only for those.
        let extra = match &self.strategy {
            StrategyChoice::Ses {
                explorer,
                delay_bound,
                cache_mb,
            } => serde_json::json!({
                "explorer": explorer.name(),
                "delay_bound": delay_bound,
                "cache_mb": cache_mb,
            }),
            StrategyChoice::Ss { explorer, c1, c2 } => serde_json::json!({
                "explorer": explorer.name(),
                "c1": c1,
                "c2": c2,
            }),
            StrategyChoice::DfsStateCache { cache_mb, .. } => serde_json::json!({
                "state_cache_mb": cache_mb,
            }),
            _ => serde_json::json!({}),
        };
        if let (Some(j), serde_json::Value::Object(e)) = (json.as_object_mut(), extra) {
            j.extend(e);
        }
        json
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
    let real = strategy.real_races();
    finish_check(guest, test, opts, explorer, report, name, real)
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
    let (strategy_name, real) = (strategy.name().to_string(), strategy.real_races());
    finish_check(guest, test, opts, explorer, report, strategy_name, real)
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
    real: Vec<RealRace>,
) -> Result<CheckOutcome, HostError> {
    let races = real
        .iter()
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
            }
        })
        .collect();
    let bug = match report.first_bug() {
        Some(b) => {
            let (trace, _) = trace_schedule(&mut explorer.program, &b.schedule)?;
            let steps = schedule_steps(&explorer.program, &b.schedule);
            let schedule = Schedule::new(
                guest.module_hash().to_string(),
                test.to_string(),
                strategy_name.clone(),
                opts.seed,
                opts.to_json(),
                Some(b.failure.clone()),
                steps,
            );
            Some(BugReport {
                failure: b.failure.clone(),
                found_by: b.found_by.clone(),
                trace,
                schedule,
                execution: b.execution,
            })
        }
        None => None,
    };
    Ok(CheckOutcome {
        test: test.into(),
        strategy: strategy_name,
        seed: opts.seed,
        report,
        bug,
        races,
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
    /// The failure recorded in the file came back, identical.
    pub fn reproduces(&self, schedule: &Schedule) -> bool {
        self.failure.is_some() && self.failure == schedule.failure
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
    let config = Config {
        max_executions: 1,
        max_steps,
        snapshot_every_cost: None,
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
}
