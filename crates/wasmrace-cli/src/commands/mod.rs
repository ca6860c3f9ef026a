//! The subcommands, one per file, and the host flags `check` and `replay`
//! share: a schedule only reproduces under the host bounds it was found
//! with, so replay accepts the same ones.

pub mod bench;
pub mod bisect;
pub mod check;
pub mod list;
pub mod merge;
mod refusals;
pub mod replay;
pub mod shrink;
pub mod test;

use anyhow::{bail, Result};
use wasmrace_host::HostConfig;

/// The bounds and knobs of the wasm host (`HostConfig`). Defaults come from
/// `HostConfig::default()`, so help text and behaviour cannot drift apart.
/// The bounds are `Option`s so that `replay` can tell a flag given from a
/// default: a schedule file's own settings apply unless a flag is given.
#[derive(clap::Args, Clone, Debug)]
pub struct HostArgs {
    #[arg(long, value_name = "N", help = format!(
        "Wasm instructions one step may run before it fails as a runaway loop \
         (fuel, not time, so outcomes are deterministic) [default: {}]",
        HostConfig::default().fuel_per_step
    ))]
    pub fuel_per_step: Option<u64>,
    #[arg(long, value_name = "MB", help = format!(
        "Guest linear memory limit, in MiB [default: {}]",
        HostConfig::default().max_memory_bytes >> 20
    ))]
    pub max_memory_mb: Option<u64>,
    #[arg(long, value_name = "MB", help = format!(
        "What a guest can make the host hold (messages, names, table \
         entries, threads), in MiB [default: {}]",
        HostConfig::default().max_host_bytes >> 20
    ))]
    pub max_host_memory_mb: Option<u64>,
    #[arg(long, value_name = "KIB", help = format!(
        "Log bytes a traced execution keeps (the rest is dropped, and the \
         trace says so), in KiB; as many again for the objects' states it \
         records per step [default: {}]",
        HostConfig::default().max_log_bytes >> 10
    ))]
    pub max_log_kib: Option<u64>,
    /// Largest module file read, in MiB
    #[arg(long, value_name = "MB", default_value_t = HostConfig::default().max_module_bytes >> 20)]
    pub max_module_mb: u64,
    #[arg(long, value_name = "KIB", help = format!(
        "Shadow stack of each spawned thread, in KiB [default: {}]",
        HostConfig::default().thread_stack_bytes >> 10
    ))]
    pub thread_stack_kib: Option<u32>,
    #[arg(long, value_name = "KIB", help = format!(
        "Asyncify buffer of each thread (the locals of a suspended call stack), \
         in KiB [default: {}]",
        HostConfig::default().asyncify_buffer_bytes >> 10
    ))]
    pub asyncify_buffer_kib: Option<u32>,
    /// Do not read or write the cache of instrumented and compiled modules
    /// ($WASMRACE_CACHE_DIR, else $XDG_CACHE_HOME/wasmrace, else
    /// ~/.cache/wasmrace)
    #[arg(long)]
    pub no_cache: bool,
    /// Data races on plain memory: `fail` watches every plain load and
    /// store and fails an execution at the first race (two threads, a
    /// common byte, one writing, no happens-before between them); `report`
    /// goes on exploring and lists every distinct race (by its pair of
    /// sites) at the end, exit code 1 if there is one; `off` does not look
    /// (faster; what a proof then covers is narrower). Replay, shrink and
    /// bisect take the schedule's when not given
    #[arg(long, value_name = "fail|report|off")]
    pub data_races: Option<DataRacesArg>,
    /// An argument for a std command module, after its name in
    /// `std::env::args` (repeat for several; recorded in schedule files)
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// An environment variable of a std guest, `std::env::var` (repeat for
    /// several; recorded in schedule files)
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<String>,
}

/// `--env`'s value: `KEY=VALUE` with a non-empty key.
fn parse_env(s: &str) -> Result<String, String> {
    match s.split_once('=') {
        Some((key, _)) if !key.is_empty() => Ok(s.to_string()),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

/// The values of `--data-races`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DataRacesArg {
    /// Detect races; the first one fails the execution.
    Fail,
    /// Detect races, go on, and list the distinct ones at the end.
    Report,
    /// Do not watch plain memory.
    Off,
}

impl DataRacesArg {
    /// The host's setting.
    pub fn setting(self) -> wasmrace_trace::DataRaces {
        match self {
            DataRacesArg::Fail => wasmrace_trace::DataRaces::Fail,
            DataRacesArg::Report => wasmrace_trace::DataRaces::Report,
            DataRacesArg::Off => wasmrace_trace::DataRaces::Off,
        }
    }
}

impl HostArgs {
    /// The configuration the flags give, defaults where none is given.
    pub fn config(&self) -> Result<HostConfig> {
        let defaults = HostConfig::default();
        let mut config = HostConfig {
            max_module_bytes: mib("--max-module-mb", self.max_module_mb)?,
            cache_dir: if self.no_cache {
                None
            } else {
                defaults.cache_dir.clone()
            },
            ..defaults
        };
        if let Some(fuel) = self.fuel_per_step {
            config.fuel_per_step = fuel_per_step(fuel)?;
        }
        if let Some(mb) = self.max_memory_mb {
            config.max_memory_bytes = mib("--max-memory-mb", mb)?;
        }
        if let Some(k) = self.thread_stack_kib {
            config.thread_stack_bytes = kib("--thread-stack-kib", k)?;
        }
        if let Some(k) = self.asyncify_buffer_kib {
            config.asyncify_buffer_bytes = kib("--asyncify-buffer-kib", k)?;
        }
        if let Some(r) = self.data_races {
            config.data_races = r.setting();
        }
        config.args = self.args.clone();
        config.env = self.env.clone();
        if let Some(mb) = self.max_host_memory_mb {
            config.max_host_bytes = mib("--max-host-memory-mb", mb)?;
        }
        if let Some(k) = self.max_log_kib {
            config.max_log_bytes = k.checked_mul(1 << 10).ok_or_else(|| {
                anyhow::anyhow!("`--max-log-kib {k}` is out of range; give a number of KiB")
            })?;
        }
        Ok(config)
    }

    /// The `reproduce with:` command of `schedule` on `module`, one rule
    /// for every command that prints one: it runs as printed (the program
    /// as `report::program_word` names it, shell-quoted words, and the host
    /// flags the file does not record).
    pub fn replay_command(&self, module: &std::path::Path, schedule: &std::path::Path) -> String {
        let mut words = vec![
            crate::report::program_word(),
            "replay".to_string(),
            module.display().to_string(),
            schedule.display().to_string(),
        ];
        words.extend(self.replay_flags());
        crate::report::command_line(&words)
    }

    /// The host flag a schedule file does not record, when not at its
    /// default: a module over the default size limit needs the same
    /// `--max-module-mb` to be read again. Every bound an execution's
    /// outcome depends on is recorded in the schedule file, which replay
    /// reads.
    pub fn replay_flags(&self) -> Vec<String> {
        let default = HostConfig::default().max_module_bytes >> 20;
        if self.max_module_mb == default {
            return Vec::new();
        }
        vec!["--max-module-mb".into(), self.max_module_mb.to_string()]
    }
}

fn fuel_per_step(fuel: u64) -> Result<u64> {
    if fuel == 0 {
        bail!("`--fuel-per-step` must be at least 1");
    }
    Ok(fuel)
}

/// `mb` MiB in bytes, refused when zero or past `u64`.
pub fn mib(flag: &str, mb: u64) -> Result<u64> {
    match mb.checked_mul(1 << 20).filter(|&b| b > 0) {
        Some(b) => Ok(b),
        None => bail!("`{flag} {mb}` is out of range; give a positive number of MiB"),
    }
}

/// `k` KiB in bytes, refused when zero or past `u32`.
pub fn kib(flag: &str, k: u32) -> Result<u32> {
    match k.checked_mul(1024).filter(|&b| b > 0) {
        Some(b) => Ok(b),
        None => bail!("`{flag} {k}` is out of range; give a positive number of KiB below 4194304"),
    }
}
