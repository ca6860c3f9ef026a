//! `wasmrace check`: explores the interleavings of a module's tests and
//! reports the first failing one of each, with a schedule file and the
//! command that replays it.

use super::refusals::{out_of_range, refusal, unsupported};
use super::HostArgs;
use crate::html;
use crate::lanes;
use crate::output;
use crate::partition::{self, PartitionArg};
use crate::report;
use crate::Verdict;
use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmrace_explore::strategies::registry::{self, Knob, StrategyOptions, REGISTRY};
use wasmrace_explore::strategies::{DporMode, ExplorerKind};
use wasmrace_explore::{Config, Report};
use wasmrace_host::{CheckOptions, CheckOutcome, Guest, HostError, ShrinkOptions, StrategyChoice};

const AFTER_HELP: &str = "\
Output: for each test, either `no bug in N executions (...)`, saying whether
the space was exhausted and which flag raises the bound that cut it short, or
the failure, the failing interleaving as numbered steps, the schedule file
written and the `wasmrace replay` command that reproduces it.

Determinism: the same module, seed and options print byte-identical stdout,
except the lines starting with `time:` (with --json, the `elapsed_ms`
fields). A run cut short by --time-budget is the exception: how far it got
depends on the machine.

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
  wasmrace check app.wasm --strategy random --partition 2/4 --json > part2.json";

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
}

impl DporArg {
    fn mode(self) -> DporMode {
        match self {
            DporArg::Optimal => DporMode::Optimal,
            DporArg::Source => DporMode::Source,
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
    /// to K. Write each with --json and add them up with `wasmrace merge`
    /// (docs/scale-out.md)
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
    #[arg(long, value_name = "N")]
    jobs: Option<u32>,
    #[arg(long, value_name = "D", help = format!(
        "Decisions whose hash picks the partition of a dfs execution \
         (with --partition; --jobs shares the tree instead) [default: {}]",
        Config::default().split_depth
    ))]
    split_depth: Option<usize>,
    /// Seed of the random strategy (recorded in schedule files)
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the schedule of a bug here (default:
    /// `<module stem>.<test>.schedule.json` in --schedule-dir; with several
    /// tests the test name is added before the extension)
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
}

/// What [`CheckCommand::options`] settles before the module loads.
struct Settled {
    opts: CheckOptions,
    /// Threads for the exploration.
    jobs: u32,
    /// How the strategy splits its work.
    split: wasmrace_explore::Split,
}

impl CheckCommand {
    pub fn run(self) -> Result<Verdict> {
        let Settled { opts, jobs, split } = self.options()?;
        let guest = Guest::load(&self.module, self.host.config()?.with_slots_for(jobs))?;
        let tests: Vec<String> = match &self.test {
            Some(t) => {
                if !guest.tests().contains(t) {
                    return Err(HostError::UnknownTest {
                        name: guest.name().into(),
                        test: t.clone(),
                        available: format!("`{}`", guest.tests().join("`, `")),
                    }
                    .into());
                }
                vec![t.clone()]
            }
            None => guest.tests().to_vec(),
        };
        let several = tests.len() > 1;
        let mut results = Vec::new();
        let mut failed = Vec::new();
        // A schedule that cannot be written does not cost the user the
        // report: it is printed, and the error comes after it (exit 2).
        let mut write_error = None;
        let mut explored = Vec::new();
        // A strategy that cannot split runs the tests side by side: an
        // explicit `--jobs` above 1 needs more than one test, which only
        // the loaded module says (`options` checked the rest). The
        // strategy is built again only for the refusal's words.
        let given = self.jobs.unwrap_or(1);
        if given > 1 && tests.len() == 1 && split == wasmrace_explore::Split::None {
            let built = opts.strategy.build(self.seed);
            partition::check_split(&*built, None, given, self.state_cache, false)?;
        }
        let (lanes, jobs) = (
            lanes::count(split, jobs, tests.len()),
            lanes::within(split, jobs),
        );
        let explore_lane = |test: &str| explore(&guest, test, &opts, true, 1);
        let mut report_all = |ahead: &mut dyn Iterator<Item = Result<CheckOutcome>>| -> Result<()> {
            for (i, test) in tests.iter().enumerate() {
                let mut outcome = match ahead.next() {
                    Some(explored) => explored?,
                    None => explore(&guest, test, &opts, self.json, jobs)?,
                };
                self.shrink(&guest, &mut outcome)?;
                let schedule_path = match &outcome.bug {
                    Some(bug) => {
                        failed.push(test.clone());
                        let written = self.write_schedule(test, several, &bug.schedule.to_json());
                        if let Written::Failed(message) = &written {
                            write_error.get_or_insert_with(|| message.clone());
                        }
                        Some(written)
                    }
                    None => {
                        if self.races == RacesArg::Fail && !outcome.races.is_empty() {
                            failed.push(test.clone());
                        }
                        None
                    }
                };
                if self.json {
                    results.push(self.json_result(&outcome, &opts, schedule_path.as_ref()));
                } else {
                    let mut text = if i > 0 {
                        "\n".to_string()
                    } else {
                        String::new()
                    };
                    text.push_str(&self.text_result(&outcome, &opts, schedule_path.as_ref()));
                    output::print(&text)?;
                }
                if self.html.is_some() {
                    explored.push(outcome);
                }
            }
            Ok(())
        };
        match lanes {
            1 => report_all(&mut std::iter::empty())?,
            _ => lanes::explore_all(&tests, lanes, explore_lane, report_all)?,
        }
        if let Some(path) = &self.html {
            self.write_html(path, &explored, &opts)?;
        }
        if self.json {
            let doc = serde_json::json!({
                "module": self.module.display().to_string(),
                "module_blake3": guest.module_hash(),
                "tests": results,
            });
            let mut text = serde_json::to_string_pretty(&doc)?;
            text.push('\n');
            output::print(&text)?;
        } else if several {
            let passed = tests.len() - failed.len();
            let mut text = format!(
                "\n{} tests: {} with a bug, {passed} without",
                tests.len(),
                failed.len()
            );
            if !failed.is_empty() {
                let names: Vec<String> = failed.iter().map(|t| report::shown(t)).collect();
                text.push_str(&format!(" (bugs in `{}`)", names.join("`, `")));
            }
            text.push('\n');
            output::print(&text)?;
        }
        if let Some(message) = write_error {
            bail!("{message}");
        }
        Ok(if failed.is_empty() {
            Verdict::NoBug
        } else {
            Verdict::Bug
        })
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
        if self.jobs == Some(0) {
            bail!("`--jobs` must be at least 1");
        }
        // Built once, to ask how it splits.
        let built = strategy.build(self.seed);
        let split = built.split();
        let jobs =
            (self.jobs).unwrap_or_else(|| partition::default_jobs(split, self.test.is_none()));
        let by_prefix = split == wasmrace_explore::Split::ByPrefix;
        // Threads share the tree rather than split it by prefix: only a
        // partition uses the depth.
        if self.split_depth.is_some() && (!by_prefix || self.partition.is_none()) {
            bail!(
                "`--split-depth` only applies to a strategy that splits by prefix (`dfs`), with \
                 `--partition`"
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
                partition: self.partition.map(PartitionArg::partition),
                split_depth: self.split_depth.unwrap_or(defaults.explore.split_depth),
                ..defaults.explore
            },
        };
        Ok(Settled { opts, jobs, split })
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
        }
    }

    /// Writes the schedule of a bug in `test`: to `--schedule-out`, or into
    /// `--schedule-dir`, created on demand.
    fn write_schedule(&self, test: &str, several: bool, json: &str) -> Written {
        let out = self.schedule_out.as_deref();
        let mut path = report::schedule_path(&self.module, test, out, several);
        if out.is_none() {
            if let Err(e) = std::fs::create_dir_all(&self.schedule_dir) {
                return Written::Failed(format!(
                    "cannot create schedule folder `{}`: {e}",
                    self.schedule_dir.display()
                ));
            }
            path = self.schedule_dir.join(path);
        }
        match std::fs::write(&path, json) {
            Ok(()) => Written::To(path),
            Err(e) => Written::Failed(format!(
                "cannot write schedule file `{}`: {e}",
                path.display()
            )),
        }
    }

    /// The command that replays a schedule: the module as the user named
    /// it (the schedule file holds the settings the bug was found under).
    fn reproduce_command(&self, schedule: &Path) -> String {
        let mut words = vec![
            report::program_word(),
            "replay".to_string(),
            self.module.display().to_string(),
            schedule.display().to_string(),
        ];
        words.extend(self.host.replay_flags());
        report::command_line(&words)
    }

    fn text_result(
        &self,
        outcome: &CheckOutcome,
        opts: &CheckOptions,
        schedule_path: Option<&Written>,
    ) -> String {
        let r = &outcome.report;
        let part = self
            .partition
            .map_or(String::new(), |p| format!(", partition {p}"));
        let head = format!(
            "test `{}` ({}{part})",
            report::shown(&outcome.test),
            report::strategy_description(&opts.strategy, opts.seed)
        );
        let mut out = String::new();
        match (&outcome.bug, schedule_path) {
            (Some(bug), Some(path)) => {
                out.push_str(&format!(
                    "{head}: BUG found in execution {}\n\n",
                    bug.execution
                ));
                out.push_str(&report::failure_block(&bug.failure));
                if bug.found_by != outcome.strategy {
                    out.push_str(&format!(
                        "found by: {} (member of the {})\n",
                        bug.found_by, outcome.strategy
                    ));
                }
                out.push_str(&report::shrunk_line(bug.shrunk_from.as_ref()));
                out.push('\n');
                out.push_str(&report::trace_block(&bug.trace, self.full_trace));
                out.push('\n');
                match path {
                    Written::To(path) => {
                        out.push_str(&format!("schedule written to {}\n", path.display()));
                        out.push_str(&format!(
                            "reproduce with: {}\n",
                            self.reproduce_command(path)
                        ));
                    }
                    Written::Failed(message) => {
                        out.push_str(&format!("schedule not written: {message}\n"));
                    }
                }
            }
            _ => {
                out.push_str(&format!("{head}: {}\n", report::no_bug_summary(r)));
                out.push_str(&report::pass_notes(r, outcome.nothing_to_interleave));
            }
        }
        out.push_str(&report::strategy_stats_block(r));
        out.push_str(&report::races_block(&outcome.races));
        out.push_str(&report::timing_line(
            r.executions,
            r.executions_run,
            r.elapsed,
        ));
        out
    }

    /// Writes the HTML report of every test explored to `path`.
    fn write_html(
        &self,
        path: &Path,
        outcomes: &[CheckOutcome],
        opts: &CheckOptions,
    ) -> Result<()> {
        let module = self.module.display().to_string();
        let sections = outcomes
            .iter()
            .map(|o| {
                let mut notes = vec![report::strategy_description(&opts.strategy, opts.seed)];
                match &o.bug {
                    Some(bug) => {
                        notes.push(format!(
                            "BUG found in execution {} by {}",
                            bug.execution, bug.found_by
                        ));
                        let shrunk = report::shrunk_line(bug.shrunk_from.as_ref());
                        if !shrunk.is_empty() {
                            notes.push(shrunk.trim_end().to_string());
                        }
                    }
                    None => notes.push(report::no_bug_summary(&o.report)),
                }
                html::Section {
                    test: &o.test,
                    notes,
                    failure: o.bug.as_ref().map(|b| &b.failure),
                    trace: o.bug.as_ref().map_or(&[], |b| &b.trace),
                    curve: None,
                }
            })
            .collect();
        let page = html::Page {
            command: "check",
            module: &module,
            sections,
        };
        html::write(path, &page, self.json)
    }

    /// Shrinks the bug of `outcome`, if any, unless `--no-shrink`; a
    /// schedule that does not shrink (or, impossibly, does not replay)
    /// stays as found.
    fn shrink(&self, guest: &Guest, outcome: &mut CheckOutcome) -> Result<()> {
        let Some(bug) = outcome.bug.as_mut().filter(|_| !self.no_shrink) else {
            return Ok(());
        };
        let opts = ShrinkOptions {
            budget_steps: self.shrink_budget,
            max_steps: Some(self.max_steps),
        };
        match wasmrace_host::shrink_bug(guest, bug, &opts) {
            Ok(()) | Err(HostError::NotReproduced { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn json_result(
        &self,
        outcome: &CheckOutcome,
        opts: &CheckOptions,
        schedule_path: Option<&Written>,
    ) -> serde_json::Value {
        let r = &outcome.report;
        let bug = match (&outcome.bug, schedule_path) {
            (Some(bug), Some(written)) => {
                let mut json = serde_json::json!({
                    "execution": bug.execution,
                    "found_by": bug.found_by,
                    "failure": bug.failure,
                    "shrunk_from": bug.shrunk_from,
                    "trace": bug.trace,
                });
                let place = match written {
                    Written::To(path) => serde_json::json!({
                        "schedule_path": path.display().to_string(),
                        "reproduce": self.reproduce_command(path),
                    }),
                    Written::Failed(message) => serde_json::json!({
                        "schedule_path": null,
                        "schedule_error": message,
                    }),
                };
                if let (Some(j), serde_json::Value::Object(p)) = (json.as_object_mut(), place) {
                    j.extend(p);
                }
                json
            }
            _ => serde_json::Value::Null,
        };
        let mut json = serde_json::json!({
            "test": outcome.test,
            "strategy": outcome.strategy,
            "seed": outcome.seed,
            "options": opts.to_json(),
            "executions": r.executions,
            "exhausted": r.exhausted,
            "exhausted_covers": r.exhausted.then_some(report::EXHAUSTED_COVERS),
            "nothing_to_interleave": outcome.nothing_to_interleave.map(|n| n.reason()),
            "bound_hits": report::bound_hits_json(r),
            "strategy_stats": report::strategy_stats_json(r),
            "elapsed_ms": report::elapsed_ms(r.elapsed),
            "bug": bug,
            "races": outcome.races.iter().map(|r| serde_json::json!({
                "sites": [r.sites.0, r.sites.1],
                "object": r.object,
                "count": r.count,
                "executions": r.executions,
                "first_execution": r.first_execution,
                // What `wasmrace merge` merges and sorts by, as one run.
                "key": [r.key.0, r.key.1, r.key.2],
            })).collect::<Vec<_>>(),
        });
        if let Some(j) = json.as_object_mut() {
            j.extend(report::search_json(r));
        }
        if let (Some(p), Some(j)) = (self.partition, json.as_object_mut()) {
            j.insert(
                "partition".into(),
                partition::partition_json(p, opts, outcome),
            );
        }
        json
    }
}

/// Where schedule files go unless `--schedule-dir` or `--schedule-out`
/// says otherwise: one folder under the working directory, not its top
/// level.
pub const DEFAULT_SCHEDULE_DIR: &str = "wasmrace-schedules";

/// Where the schedule of a bug went.
enum Written {
    /// Written to this file.
    To(PathBuf),
    /// Not written: the error, in words.
    Failed(String),
}

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
