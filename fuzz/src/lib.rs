//! The fuzz harness of the host, on stable Rust: generated modules (some
//! importing our hooks), mutated guests, mutated schedule files and mutated
//! cache entries, each run in-process through the host's public API (load,
//! list the tests, check with a small budget, replay) under strict limits
//! (fuel per step, steps, executions, guest memory); and mutated parts of
//! partitioned runs, merged by `wasmrace_merge` as `wasmrace merge` does. Every input is derived
//! from the seed and its index alone, so `--seed S --start I --inputs 1`
//! runs input `I` again.
//!
//! What the harness asserts of every input: no panic (`catch_unwind`), no
//! hang (a watchdog aborts the process naming the input), bounded memory
//! (the process's resident set after the input stays under a limit), and an
//! outcome that is `Ok`, a typed one-line [`HostError`] (for parts, a
//! `MergeError`) or a failure report;
//! where the input should behave like a known one (an untouched schedule,
//! a corrupted cache entry), the outcome must be the known one.

mod cache;
mod generate;
mod mutate;
mod parts;
mod pipeline;
mod schedules;
mod signatures;
mod std_modules;
mod watch;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wasmrace_host::HostError;

pub use generate::{every_hook_module, hook_imports};
pub use watch::{peak_rss_bytes, rss_bytes};

/// What a campaign feeds the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Valid modules from `wasm-smith`, importing our hooks and exporting a
    /// test and a thread entry the way the SDK does.
    Modules,
    /// The built guest programs with bytes flipped, cut or spliced.
    Guests,
    /// Schedule files of real bugs, mutated as text and as JSON.
    Schedules,
    /// The module cache's entries of a real guest, corrupted or swapped.
    Cache,
    /// The `--json` parts of real partitioned runs, reshaped and mutated,
    /// merged by `wasmrace_merge` (no wasm runs).
    Parts,
}

impl Kind {
    /// Every kind, in the order `--kind all` runs them.
    pub const ALL: [Kind; 5] = [
        Kind::Modules,
        Kind::Guests,
        Kind::Schedules,
        Kind::Cache,
        Kind::Parts,
    ];

    /// The name `--kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Modules => "modules",
            Kind::Guests => "guests",
            Kind::Schedules => "schedules",
            Kind::Cache => "cache",
            Kind::Parts => "parts",
        }
    }

    /// The kind called `name`.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The bounds every input runs under.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Fuel of one step (`HostConfig::fuel_per_step`).
    pub fuel_per_step: u64,
    /// Guest memory (`HostConfig::max_memory_bytes`).
    pub max_memory_bytes: u64,
    /// Steps per execution (`Config::max_steps`).
    pub max_steps: u64,
    /// Executions per check (`Config::max_executions`).
    pub max_executions: u64,
    /// Wall time of one input before the watchdog declares a hang and
    /// aborts the process.
    pub input_timeout: Duration,
    /// The process's resident set after an input at most.
    pub max_rss_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel_per_step: 200_000,
            max_memory_bytes: 16 << 20,
            max_steps: 200,
            max_executions: 12,
            input_timeout: Duration::from_secs(120),
            max_rss_bytes: 2 << 30,
        }
    }
}

/// A campaign: which inputs of which kind, under which limits, and where
/// its files go.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// What is fed to the host.
    pub kind: Kind,
    /// Derives every input (with its index).
    pub seed: u64,
    /// Index of the first input.
    pub start: u64,
    /// Inputs to run.
    pub inputs: u64,
    /// The bounds.
    pub limits: Limits,
    /// A directory the campaign may fill (module caches, schedule files);
    /// emptied first.
    pub scratch: PathBuf,
}

/// An input that broke a property.
#[derive(Clone, Debug)]
pub struct Defect {
    /// Its kind.
    pub kind: Kind,
    /// Its index (rerun it with `--start` and `--inputs 1`).
    pub index: u64,
    /// What went wrong.
    pub what: String,
}

impl std::fmt::Display for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} input {}: {}",
            self.kind.name(),
            self.index,
            self.what
        )
    }
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Inputs run.
    pub inputs: u64,
    /// How often each outcome happened (`load: Invalid`, `check: bug
    /// (api misuse)`, `replay: reproduced`, ...); an input has several.
    pub outcomes: BTreeMap<String, u64>,
    /// The inputs that broke a property.
    pub defects: Vec<Defect>,
    /// The process's peak resident set at the end, in bytes (0 where
    /// `/proc` is not available).
    pub peak_rss_bytes: u64,
    /// Wall time of the campaign.
    pub elapsed: Duration,
}

impl Tally {
    /// How often `outcome` happened.
    pub fn count(&self, outcome: &str) -> u64 {
        self.outcomes.get(outcome).copied().unwrap_or(0)
    }

    /// How often an outcome starting with `prefix` happened.
    pub fn count_prefix(&self, prefix: &str) -> u64 {
        self.outcomes
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v)
            .sum()
    }
}

/// The outcomes of one input; an `Err` of [`Target::run`] is a defect.
pub(crate) type Outcomes = Vec<String>;

/// One kind of input: prepared once per campaign, then run per input with
/// that input's own random source.
pub(crate) trait Target {
    /// Runs input `rng` through the host, pushing what happened to `out`;
    /// an error is a broken property.
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String>;
}

/// Runs a campaign. Errors only when it cannot start (a missing guest, an
/// unusable scratch directory); broken properties are the tally's defects.
pub fn run(c: &Campaign) -> Result<Tally, String> {
    let _ = std::fs::remove_dir_all(&c.scratch);
    std::fs::create_dir_all(&c.scratch)
        .map_err(|e| format!("cannot create `{}`: {e}", c.scratch.display()))?;
    let mut target: Box<dyn Target> = match c.kind {
        Kind::Modules => Box::new(generate::Modules::new(&c.limits)),
        Kind::Guests => Box::new(mutate::Guests::new(&c.limits)?),
        Kind::Schedules => Box::new(schedules::Schedules::new(&c.limits, &c.scratch)?),
        Kind::Cache => Box::new(cache::CacheEntries::new(&c.limits, &c.scratch)?),
        Kind::Parts => Box::new(parts::Parts::new()?),
    };
    let began = Instant::now();
    let mut tally = Tally::default();
    for index in c.start..c.start.saturating_add(c.inputs) {
        let label = format!("{} input {index} (seed {})", c.kind.name(), c.seed);
        if std::env::var_os("WASMRACE_FUZZ_VERBOSE").is_some() {
            // The errors printed next are this input's.
            eprintln!("wasmrace-fuzz: {label}");
        }
        let mut rng = ChaCha8Rng::seed_from_u64(input_seed(c.seed, c.kind, index));
        let mut out = Outcomes::new();
        let guard = watch::arm(&label, c.limits.input_timeout);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            target.run(&mut rng, &mut out)
        }));
        drop(guard);
        let broken = match result {
            Ok(Ok(())) => None,
            Ok(Err(what)) => Some(what),
            Err(payload) => Some(format!("panic: {}", panic_message(&*payload))),
        };
        let rss = rss_bytes();
        let over = (rss > c.limits.max_rss_bytes).then(|| {
            format!(
                "resident set `{}` MiB after the input, over the limit of `{}` MiB",
                rss >> 20,
                c.limits.max_rss_bytes >> 20
            )
        });
        for what in broken.into_iter().chain(over) {
            tally.defects.push(Defect {
                kind: c.kind,
                index,
                what,
            });
        }
        for o in out {
            *tally.outcomes.entry(o).or_default() += 1;
        }
        tally.inputs += 1;
    }
    tally.peak_rss_bytes = peak_rss_bytes();
    tally.elapsed = began.elapsed();
    Ok(tally)
}

/// The seed of input `index`: one input's bytes depend on nothing else.
fn input_seed(seed: u64, kind: Kind, index: u64) -> u64 {
    let mut h = mix(seed);
    h = mix(h ^ kind as u64);
    mix(h ^ index)
}

/// A 64-bit mixer (splitmix64's finalizer).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string payload>".into()
    }
}

/// The error's variant name (`Invalid`, `WasmOpt`) for the tally, after
/// checking the property every host error has: its message is one line.
pub(crate) fn typed(e: &HostError) -> Result<String, String> {
    let msg = e.to_string();
    if msg.contains('\n') || msg.contains('\r') {
        return Err(format!("error message is not one line: {msg:?}"));
    }
    if std::env::var_os("WASMRACE_FUZZ_VERBOSE").is_some() {
        eprintln!("wasmrace-fuzz: {msg}");
    }
    let debug = format!("{e:?}");
    let end = debug
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(debug.len());
    Ok(debug[..end].to_string())
}
