//! `wasmrace check`: explores the interleavings of a module's tests and
//! reports the first failing one of each, with a schedule file and the
//! command that replays it.

use super::refusals::{out_of_range, refusal, unsupported};
use super::HostArgs;
use crate::lanes;
use crate::output;
use crate::partition::{self, PartitionArg};
use crate::verdict::Verdict;
use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use results::Results;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wasmrace_explore::strategies::descriptor::{Knob, StrategyOptions};
use wasmrace_explore::strategies::registry::{self, REGISTRY};
use wasmrace_explore::strategies::{DporMode, ExplorerKind};
use wasmrace_explore::{Config, Report};
use wasmrace_host::{CheckOptions, CheckOutcome, Guest, HostError, ShrinkOptions, StrategyChoice};

mod results;

const AFTER_HELP: &str = "\
Output: for each test, either `no bug in N executions (...)`, saying whether
the space was exhausted and which flag raises the bound that cut it short, or
the failure, the failing interleaving as numbered steps, the schedule file
written and the `wasmrace replay` command that reproduces it.

Determinism: the same module, seed and options print byte-identical stdout,
except the lines starting with `time:` (with --json, the `elapsed_ms`
fields). A run cut short by --time-budget is the exception: how far it got
depends on the machine; so is one a per-thread memory bound stops
(--frontier-mb, and --cache-mb under --jobs): where depends on --jobs.

Exit status: 0 no bug in any test, 1 a bug in at least one test, 2 error.

Examples:
  wasmrace check app.wasm
  wasmrace check app.wasm --test lost_update
  wasmrace check app.wasm --preemption-bound 3 --max-executions 1000000
  wasmrace check app.wasm --strategy random --seed 7 --max-executions 5000
  wasmrace check app.wasm --strategy ses --explorer rtc --delay-bound 3
  wasmrace check app.wasm --strategy ss --explorer prr --time-budget 60
  wasmrace check app.wasm --strategy dfs --unbounded --state-cache
  wasmrace check app.wasm --json | jq '.tests[].bug.failure'
  wasmrace check app.wasm --strategy random --partition 2/4 --json > part2.json
  wasmrace check app.wasm --test big --strategy dpor --dpor trust --jobs 2
  wasmrace check app.wasm --test big --strategy dpor --dpor trust --partition 2/4 --json > part2.json";

/// `--strategy`'s values: the registry's strategies, each with its line
/// of help.
fn strategy_values() -> PossibleValuesParser {
    PossibleValuesParser::new(
        REGISTRY
            .iter()
            .map(|d| PossibleValue::new(d.name).help(d.about)),
    )
}

/// The defaults of the strategy called `name`, for help texts.
fn defaults(name: &str) -> StrategyOptions {
    registry::find(name).map_or(StrategyOptions::NONE, |d| d.defaults)
}

/// An optional value as help texts state it.
fn shown<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_string(), |v| v.to_string())
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplorerArg {
    /// Round robin: threads in creation order, each runs until it blocks
    Rr,
    /// Run to completion: the receiver of the latest message runs first
    Rtc,
    /// Probabilistic round robin: new threads at random places (--seed)
    Prr,
}

impl ExplorerArg {
    fn kind(self) -> ExplorerKind {
        match self {
            ExplorerArg::Rr => ExplorerKind::RoundRobin,
            ExplorerArg::Rtc => ExplorerKind::RunToCompletion,
            ExplorerArg::Prr => ExplorerKind::ProbabilisticRoundRobin,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DporArg {
    /// Optimal DPOR (wakeup trees): each trace exactly once
    Optimal,
    /// Source-DPOR (source sets and sleep sets): may run sleep-set-blocked executions
    Source,
    /// TruSt-style (Kokologiannakis et al., POPL 2022): every job depends on nothing but itself,
    /// so --jobs N splits one test; steps over one object each (condvars, the registry and read
    /// locks are not exhausted)
    Trust,
}

impl DporArg {
    fn mode(self) -> DporMode {
        match self {
            DporArg::Optimal => DporMode::Optimal,
            DporArg::Source => DporMode::Source,
            DporArg::Trust => DporMode::Trust,
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RacesArg {
    /// Real races are listed; only failures make the exit code 1
    Warn,
    /// A real race counts as a bug (exit code 1)
    Fail,
}

/// Explore the interleavings of a module's tests and report bugs
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct CheckCommand {
    /// The guest module (.wasm), built for wasm32-unknown-unknown with the
    /// wasmrace guest SDK
    #[arg(value_name = "MODULE")]
    module: PathBuf,
    /// Check only this test (default: every test of the module, in order)
    #[arg(long, value_name = "NAME")]
    test: Option<String>,
    /// Exploration strategy
    #[arg(long, value_parser = strategy_values(), default_value = registry::default_descriptor().name)]
    strategy: String,
    #[arg(long, value_name = "D", help = format!(
        "Priority change points of `--strategy pct` [default: {}]",
        shown(defaults("pct").depth)
    ))]
    depth: Option<u32>,
    /// What a real race found by `--strategy racefuzzer` is
    #[arg(long, value_enum, default_value_t = RacesArg::Warn)]
    races: RacesArg,
    #[arg(long, value_name = "N", conflicts_with = "unbounded", help = format!(
        "Explore interleavings with at most N preemptions (dfs; dpor: bounded \
         partial-order reduction) [default: {}]",
        shown(defaults("dfs").preemption_bound.flatten())
    ))]
    preemption_bound: Option<u32>,
    /// Explore every interleaving, without a preemption bound (dfs; dpor's default)
    #[arg(long)]
    unbounded: bool,
    /// Do not explore a state twice: cache the hashes of explored states
    /// (dfs only; capped by --cache-mb)
    #[arg(long)]
    state_cache: bool,
    #[arg(long, value_enum, help = format!(
        "Delaying explorer of `--strategy ses` and `ss` [default: {}]",
        shown(defaults("ses").explorer.map(|e| e.name()))
    ))]
    explorer: Option<ExplorerArg>,
    #[arg(long, value_name = "N", help = format!(
        "Explore executions with at most N delays (ses only) [default: {}]",
        match defaults("ses").delay_bound.flatten() {
            Some(b) => b.to_string(),
            None => "no bound, until every reachable state is explored".to_string(),
        }
    ))]
    delay_bound: Option<u32>,
    #[arg(long, value_name = "MIB", help = format!(
        "Memory for the cache of explored states, in MiB (ses, and dfs with --state-cache); \
         when full, new states replace old ones (a cache shared by --jobs threads stops \
         the run instead); 0 turns the cache off [default: {}]",
        shown(defaults("ses").cache_mb)
    ))]
    cache_mb: Option<u64>,
    #[arg(long, value_name = "MIB", help = format!(
        "Memory for the jobs `--dpor trust` has yet to run, per thread, in MiB; past it \
         the run stops, not exhausted [default: {}]",
        shown(defaults("dpor").frontier_mb)
    ))]
    frontier_mb: Option<u64>,
    #[arg(long, value_name = "N", help = format!(
        "Executions with no delay sampled by `--strategy ss` (c1 of numsamples(d) = c1 * c2^d) \
         [default: {}]",
        shown(defaults("ss").c1)
    ))]
    c1: Option<u64>,
    #[arg(long, value_name = "N", help = format!(
        "Growth of the samples per extra delay of `--strategy ss` (c2) [default: {}]",
        shown(defaults("ss").c2)
    ))]
    c2: Option<u64>,
    #[arg(long, value_enum, help = format!(
        "Algorithm of `--strategy dpor` [default: {}]",
        shown(defaults("dpor").dpor.map(|m| m.name()))
    ))]
    dpor: Option<DporArg>,
    /// States saved for later (ses's frontier on one thread; its threads
    /// replay instead) kept as snapshots at most; beyond that they are
    /// replayed from their prefix
    #[arg(long, value_name = "N", default_value_t = Config::default().max_saved_snapshots)]
    max_saved_snapshots: usize,
    /// Memory for saved snapshots (ses's frontier on one thread), in MiB;
    /// beyond it saved states are replayed from their prefix
    #[arg(long, value_name = "MB", default_value_t = Config::default().max_saved_bytes >> 20)]
    saved_snapshots_mb: usize,
    /// Stop after N executions per test
    #[arg(long, value_name = "N", default_value_t = Config::default().max_executions)]
    max_executions: u64,
    /// Fail an execution that takes more than N steps (possible livelock)
    #[arg(long, value_name = "N", default_value_t = Config::default().max_steps)]
    max_steps: u64,
    /// Fair scheduling: each thread's first N `yield_now`s are free, from
    /// the next on it gives way to the threads it may be starving, so a
    /// waiting loop ends whenever the awaited thread can run; `off` explores
    /// unfair schedules too (a spin wait then hits --max-steps)
    #[arg(long, value_name = "N|off", default_value = "2", value_parser = parse_fairness_bound)]
    fairness_bound: FairnessBound,
    /// Stop exploring a test after SECS seconds of wall-clock time
    #[arg(long, value_name = "SECS")]
    time_budget: Option<u64>,
    /// Run only partition K of N of the exploration (1-based; also
    /// `count:K/N`): random, the pos family, pct, racefuzzer and the
    /// portfolio take every N-th execution of the whole --max-executions
    /// (after the calibration, detection or opening executions every
    /// partition runs), ss every N-th sample,
    /// dfs the subtrees below --split-depth decisions whose prefix hashes
    /// to K; the strategies that cannot split one test (dpor, ses,
    /// procrastination, dfs --state-cache) take whole tests of a module of
    /// several instead, test i (in the module's order, from 0) to partition
    /// i mod N + 1. Write each with --json and add them up with `wasmrace
    /// merge` (docs/scale-out.md)
    #[arg(long, value_name = "K/N", value_parser = partition::parse_partition)]
    partition: Option<PartitionArg>,
    /// Explore on N threads, each with its own instance of the module:
    /// dfs shares its search tree between them (work stealing: the same
    /// executions, the same first bug and the same numbers for any N; with
    /// --state-cache the threads share the cache too, which cannot evict:
    /// a full one stops the run); ses runs each round's executions side
    /// by side and counts them in one thread's order;
    /// random, the pos family, pct, racefuzzer and ss split into N
    /// partitions, procrastination deals out whole families, and the
    /// portfolio runs its openings side by side and then splits its
    /// samplers' executions; dpor, which cannot split its work, explores
    /// up to N of the module's tests side by side, one thread each: all
    /// report exactly what one thread reports. Default: the number of
    /// cores (one thread for dfs --state-cache, whose cache, shared,
    /// cannot evict, and for dpor with one test); an explicit N above 1
    /// for dpor with one test is an error
    /// (at most 256, `MAX_JOBS`: each thread holds an instance of the module)
    #[arg(long, value_name = "N", value_parser = crate::files::parse_jobs)]
    jobs: Option<u32>,
    #[arg(long, value_name = "D", help = format!(
        "Decisions whose hash picks the partition of a dfs execution, or job \
         levels whose key does for `dpor --dpor trust` (with --partition; --jobs \
         shares the tree instead) [default: {} decisions, {} levels]",
        Config::default().split_depth,
        wasmrace_explore::strategies::DEFAULT_SPLIT_LEVELS
    ))]
    split_depth: Option<usize>,
    /// Seed of the random strategy (recorded in schedule files)
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the schedule of a bug here instead of --schedule-dir (with
    /// several tests, the test name is added before the extension);
    /// default: `<module stem>.<test>.<tag>.schedule.json` in
    /// --schedule-dir, `<tag>` 8 hex digits of the file's contents
    #[arg(long, value_name = "PATH", conflicts_with = "schedule_dir")]
    schedule_out: Option<PathBuf>,
    /// Folder for the schedule files of bugs, created when a bug is found
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SCHEDULE_DIR)]
    schedule_dir: PathBuf,
    /// Print one JSON document on stdout instead of text
    #[arg(long)]
    json: bool,
    /// Print every step of a bug's interleaving (by default, steps repeated
    /// back to back, a waiting loop's, are shown once with a count)
    #[arg(long)]
    full_trace: bool,
    /// Also write the report as one self-contained HTML page (a lane per
    /// thread, a row per step; nothing fetched)
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Report each bug's schedule as the strategy found it, without
    /// shrinking it to the fewest preemptions, switches and steps
    #[arg(long)]
    no_shrink: bool,
    /// Steps the shrinking of each bug may replay in all
    #[arg(long, value_name = "N", default_value_t = ShrinkOptions::for_check().budget_steps)]
    shrink_budget: u64,
    #[command(flatten)]
    host: HostArgs,
    /// The tests `wasmrace test` selected (libtest's filters), instead of
    /// `--test` or all.
    #[arg(skip)]
    pub(crate) only: Option<Vec<String>>,
}

/// What [`CheckCommand::options`] settles before the module loads.
pub(crate) struct Settled {
    opts: CheckOptions,
    /// Threads for the exploration.
    jobs: u32,
    /// How the strategy splits its work.
    split: wasmrace_explore::Split,
    /// With `--partition`: how the work is shared, as the JSON names it
    /// ([`partition::sharing_name`]).
    sharing: Option<&'static str>,
    /// The partition, when `--partition` deals out whole tests
    /// ([`partition::deals_tests`]).
    deal: Option<PartitionArg>,
}

impl CheckCommand {
    pub fn run(self) -> Result<Verdict> {
        let (guest, settled) = self.load()?;
        Ok(self.run_on(&guest, &settled)?.0)
    }

    /// The module, loaded for the settled options.
    pub(crate) fn load(&self) -> Result<(Guest, Settled)> {
        let settled = self.options()?;
        self.check_outputs()?;
        let guest = Guest::load(
            &self.module,
            self.host.config()?.with_slots_for(settled.jobs),
        )?;
        Ok((guest, settled))
    }

    /// Checks the selected tests of `guest`; the verdict, and the tests
    /// with a bug.
    pub(crate) fn run_on(
        &self,
        guest: &Guest,
        settled: &Settled,
    ) -> Result<(Verdict, Vec<String>)> {
        let (jobs, split) = (settled.jobs, settled.split);
        let guest = guest.clone();
        let tests = self.selected_tests(&guest)?;
        self.refuse_one_test(settled, tests.len())?;
        // With whole tests dealt out, this partition runs its share only.
        let mine: Vec<String> = (tests.iter().enumerate())
            .filter(|&(i, _)| partition::elsewhere(settled.deal, i).is_none())
            .map(|(_, t)| t.clone())
            .collect();
        if let (Some(p), false) = (settled.deal, self.json) {
            output::print(&results::dealt_line(p, &mine, tests.len()))?;
        }
        let mut results = Results::new(self, &guest, settled, tests.len() > 1);
        let (lanes, jobs) = (
            lanes::count(split, jobs, mine.len()),
            lanes::within(split, jobs),
        );
        let opts = &settled.opts;
        let explore_lane = |test: &str| explore(&guest, test, opts, true, 1);
        let mut report_all = |ahead: &mut dyn Iterator<Item = Result<CheckOutcome>>| -> Result<()> {
            for test in &mine {
                results.add(match ahead.next() {
                    Some(explored) => explored?,
                    None => explore(&guest, test, opts, self.json, jobs)?,
                })?;
            }
            Ok(())
        };
        match lanes {
            1 => report_all(&mut std::iter::empty())?,
            _ => lanes::explore_all(&mine, lanes, explore_lane, report_all)?,
        }
        results.finish(&tests)
    }

    /// The tests to explore: `wasmrace test`'s selection, `--test`, or all
    /// of the module's.
    fn selected_tests(&self, guest: &Guest) -> Result<Vec<String>> {
        if let Some(only) = &self.only {
            return Ok(only.clone());
        }
        let Some(t) = &self.test else {
            return Ok(guest.tests().to_vec());
        };
        if !guest.tests().contains(t) {
            return Err(HostError::UnknownTest {
                name: guest.name().into(),
                test: t.clone(),
                available: format!("`{}`", guest.tests().join("`, `")),
            }
            .into());
        }
        Ok(vec![t.clone()])
    }

    /// A strategy that cannot split one test's work takes whole tests, to
    /// threads (an explicit `--jobs` above 1) or to partitions: that needs
    /// more than one test, which only the loaded module says (`options`
    /// checked the rest). The strategy is built again only for the
    /// refusal's words.
    fn refuse_one_test(&self, settled: &Settled, tests: usize) -> Result<()> {
        let given = self.jobs.unwrap_or(1);
        if tests == 1 && given > 1 && self.reports_races() {
            bail!(
                "`--data-races report` runs each test on one thread (its list is one \
                 run's), so `--jobs {given}` needs several tests; drop --jobs, or use \
                 `--data-races fail`"
            );
        }
        let by_threads = given > 1 && settled.split == wasmrace_explore::Split::None;
        if tests == 1 && (by_threads || settled.deal.is_some()) {
            let built = settled.opts.strategy.build(self.seed);
            partition::check_split(&*built, self.partition, given, self.state_cache, false)?;
        }
        Ok(())
    }

    /// Whether data races are listed rather than failed.
    fn reports_races(&self) -> bool {
        self.host.data_races == Some(super::DataRacesArg::Report)
    }

    /// The options, checked before the module loads, with the threads
    /// for the exploration (`--jobs`, else [`partition::default_jobs`]).
    fn options(&self) -> Result<Settled> {
        let defaults = CheckOptions::default();
        let descriptor = registry::find(&self.strategy)
            .with_context(|| format!("unknown strategy `{}`", self.strategy))?;
        let given = self.strategy_options();
        // Options given to a strategy that ignores them are refused, even
        // when their value is the default: the user meant something.
        for knob in Knob::ALL {
            if given.is_set(knob) && !descriptor.accepts(knob, &given) {
                bail!("{}", refusal(knob));
            }
            if let Some(message) = unsupported(descriptor.name, knob, &given) {
                bail!("{message}");
            }
            if let Some(message) = out_of_range(knob, &given) {
                bail!("{message}");
            }
        }
        let strategy = StrategyChoice::new(descriptor, &given);
        // Built once, to ask how it splits.
        let built = strategy.build(self.seed);
        // The races `--data-races report` lists are one run's: each test
        // runs whole, on one thread.
        let split = match self.reports_races() {
            true if self.partition.is_some() => bail!(
                "`--data-races report` lists the races one run of a test meets, which \
                 partitions would split between them; drop --partition, or use \
                 `--data-races fail`"
            ),
            true => wasmrace_explore::Split::None,
            false => built.profile().split,
        };
        let jobs =
            (self.jobs).unwrap_or_else(|| partition::default_jobs(split, self.test.is_none()));
        let by_jobs = split == wasmrace_explore::Split::Jobs;
        // A split by prefix counts its depth in decisions, one by jobs in
        // job levels. Threads share the tree rather than split it: only a
        // partition uses the depth.
        let takes_depth = split == wasmrace_explore::Split::ByPrefix || by_jobs;
        if self.split_depth.is_some() && (!takes_depth || self.partition.is_none()) {
            bail!(
                "`--split-depth` only applies to a strategy that splits by prefix (`dfs`, \
                 `dpor --dpor trust`), with `--partition`"
            );
        }
        let with_cache = given.state_cache == Some(true);
        partition::check_split(
            &*built,
            self.partition,
            jobs,
            with_cache,
            self.test.is_none(),
        )?;
        if self.max_executions == 0 {
            bail!("`--max-executions` must be at least 1");
        }
        if self.max_steps == 0 {
            bail!("`--max-steps` must be at least 1");
        }
        if self.time_budget == Some(0) {
            bail!("`--time-budget` must be at least 1 second");
        }
        let deal = self.partition.filter(|_| partition::deals_tests(&*built));
        let sharing = partition::sharing_name(&*built);
        let opts = CheckOptions {
            strategy,
            seed: self.seed,
            explore: Config {
                max_executions: self.max_executions,
                max_steps: self.max_steps,
                fairness_bound: self.fairness_bound.0,
                time_budget: self.time_budget.map(Duration::from_secs),
                max_saved_snapshots: self.max_saved_snapshots,
                max_saved_bytes: self.saved_snapshots_mb.saturating_mul(1 << 20),
                // Dealt tests each run whole.
                partition: self
                    .partition
                    .filter(|_| deal.is_none())
                    .map(PartitionArg::partition),
                split_depth: self.split_depth.unwrap_or(if by_jobs {
                    wasmrace_explore::strategies::DEFAULT_SPLIT_LEVELS
                } else {
                    defaults.explore.split_depth
                }),
                ..defaults.explore
            },
        };
        Ok(Settled {
            opts,
            jobs,
            split,
            sharing,
            deal,
        })
    }

    /// The strategy options given on the command line, `None` where not.
    fn strategy_options(&self) -> StrategyOptions {
        StrategyOptions {
            preemption_bound: match (self.unbounded, self.preemption_bound) {
                (true, _) => Some(None),
                (false, b) => b.map(Some),
            },
            state_cache: self.state_cache.then_some(true),
            depth: self.depth,
            explorer: self.explorer.map(ExplorerArg::kind),
            delay_bound: self.delay_bound.map(Some),
            cache_mb: self.cache_mb,
            c1: self.c1,
            c2: self.c2,
            dpor: self.dpor.map(DporArg::mode),
            frontier_mb: self.frontier_mb,
        }
    }
}

/// Where schedule files go unless `--schedule-dir` or `--schedule-out`
/// says otherwise: one folder under the working directory, not its top
/// level.
pub const DEFAULT_SCHEDULE_DIR: &str = "wasmrace-schedules";

/// Runs one test's exploration, with a progress bar on stderr when a person
/// is watching (stderr is a terminal) and a bar is wanted (`no_bar` is set
/// for JSON output, and for tests run side by side, whose bars would share
/// one line).
fn explore(
    guest: &Guest,
    test: &str,
    opts: &CheckOptions,
    no_bar: bool,
    jobs: u32,
) -> Result<CheckOutcome> {
    if no_bar || !std::io::stderr().is_terminal() {
        return Ok(wasmrace_host::check_jobs(guest, test, opts, jobs)?);
    }
    let bar = ProgressBar::with_draw_target(
        Some(opts.explore.max_executions),
        ProgressDrawTarget::stderr(),
    );
    // `wide_bar` fits the line to the terminal (a wrapped progress line
    // redraws badly); the rate is rounded, indicatif's own has decimals.
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} {wide_bar} {human_pos}/{human_len} executions ({rate}, {elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
        .progress_chars("=> "),
    );
    bar.set_prefix(test.to_string());
    // Executions can take microseconds: touch the bar only every 1000 of
    // them or every 100 ms, whichever comes first.
    let mut last_draw = Instant::now();
    let mut progress = |r: &Report| {
        if r.executions.is_multiple_of(1000) || last_draw.elapsed() >= Duration::from_millis(100) {
            bar.set_position(r.executions);
            last_draw = Instant::now();
        }
    };
    let result = if jobs > 1 {
        // Called from every worker, every 100 executions of them all;
        // indicatif limits the redraws itself.
        wasmrace_host::check_jobs_with_progress(guest, test, opts, jobs, &|n| bar.set_position(n))
    } else {
        wasmrace_host::check_with_progress(guest, test, opts, &mut progress)
    };
    bar.finish_and_clear();
    Ok(result?)
}

/// `--fairness-bound`: a number of free yields, or `off` (`None`).
#[derive(Clone, Copy, Debug)]
struct FairnessBound(Option<u32>);

fn parse_fairness_bound(s: &str) -> Result<FairnessBound, String> {
    if s == "off" {
        return Ok(FairnessBound(None));
    }
    s.parse()
        .map(|n| FairnessBound(Some(n)))
        .map_err(|_| format!("`{s}` is not a number of yields or `off`"))
}
