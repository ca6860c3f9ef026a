//! The subcommands, one per file, and the host flags `check` and `replay`
//! share: a schedule only reproduces under the host bounds it was found
//! with, so replay accepts the same ones.

pub mod bench;
pub mod check;
pub mod list;
pub mod replay;

use anyhow::{bail, Result};
use wasmrace_host::HostConfig;

/// The bounds and knobs of the wasm host (`HostConfig`). Defaults come from
/// `HostConfig::default()`, so help text and behaviour cannot drift apart.
#[derive(clap::Args, Clone, Debug)]
pub struct HostArgs {
    /// Wasm instructions one step may run before it fails as a runaway loop
    /// (fuel, not time, so outcomes are deterministic)
    #[arg(long, value_name = "N", default_value_t = HostConfig::default().fuel_per_step)]
    pub fuel_per_step: u64,
    /// Guest linear memory limit, in MiB
    #[arg(long, value_name = "MB", default_value_t = HostConfig::default().max_memory_bytes >> 20)]
    pub max_memory_mb: u64,
    /// What a guest can make the host hold (messages, names, table
    /// entries, threads), in MiB
    #[arg(long, value_name = "MB", default_value_t = HostConfig::default().max_host_bytes >> 20)]
    pub max_host_memory_mb: u64,
    /// Log bytes a traced execution keeps (the rest is dropped, and the
    /// trace says so), in KiB
    #[arg(long, value_name = "KIB", default_value_t = HostConfig::default().max_log_bytes >> 10)]
    pub max_log_kib: u64,
    /// Largest module file read, in MiB
    #[arg(long, value_name = "MB", default_value_t = HostConfig::default().max_module_bytes >> 20)]
    pub max_module_mb: u64,
    /// Shadow stack of each spawned thread, in KiB
    #[arg(long, value_name = "KIB", default_value_t = HostConfig::default().thread_stack_bytes >> 10)]
    pub thread_stack_kib: u32,
    /// Asyncify buffer of each thread (the locals of a suspended call
    /// stack), in KiB
    #[arg(long, value_name = "KIB", default_value_t = HostConfig::default().asyncify_buffer_bytes >> 10)]
    pub asyncify_buffer_kib: u32,
    /// Do not read or write the cache of instrumented and compiled modules
    /// ($WASMRACE_CACHE_DIR, else $XDG_CACHE_HOME/wasmrace, else
    /// ~/.cache/wasmrace)
    #[arg(long)]
    pub no_cache: bool,
}

impl HostArgs {
    pub fn config(&self) -> Result<HostConfig> {
        let defaults = HostConfig::default();
        if self.fuel_per_step == 0 {
            bail!("`--fuel-per-step` must be at least 1");
        }
        let Some(max_memory_bytes) = self.max_memory_mb.checked_mul(1 << 20).filter(|&b| b > 0)
        else {
            bail!(
                "`--max-memory-mb {}` is out of range; give a positive number of MiB",
                self.max_memory_mb
            );
        };
        let Some(max_module_bytes) = self.max_module_mb.checked_mul(1 << 20).filter(|&b| b > 0)
        else {
            bail!(
                "`--max-module-mb {}` is out of range; give a positive number of MiB",
                self.max_module_mb
            );
        };
        let Some(max_host_bytes) = self
            .max_host_memory_mb
            .checked_mul(1 << 20)
            .filter(|&b| b > 0)
        else {
            bail!(
                "`--max-host-memory-mb {}` is out of range; give a positive number of MiB",
                self.max_host_memory_mb
            );
        };
        let Some(max_log_bytes) = self.max_log_kib.checked_mul(1 << 10) else {
            bail!(
                "`--max-log-kib {}` is out of range; give a number of KiB",
                self.max_log_kib
            );
        };
        let kib = |flag: &str, v: u32| match v.checked_mul(1024).filter(|&b| b > 0) {
            Some(b) => Ok(b),
            None => Err(anyhow::anyhow!(
                "`{flag} {v}` is out of range; give a positive number of KiB below 4194304"
            )),
        };
        Ok(HostConfig {
            fuel_per_step: self.fuel_per_step,
            max_memory_bytes,
            max_module_bytes,
            max_host_bytes,
            max_log_bytes,
            thread_stack_bytes: kib("--thread-stack-kib", self.thread_stack_kib)?,
            asyncify_buffer_bytes: kib("--asyncify-buffer-kib", self.asyncify_buffer_kib)?,
            cache_dir: if self.no_cache {
                None
            } else {
                defaults.cache_dir
            },
            wasm_opt: defaults.wasm_opt,
        })
    }

    /// The flags whose values differ from the defaults, for printed
    /// commands that must run under the same host bounds (`--no-cache` does
    /// not change outcomes and is left out).
    pub fn non_default_flags(&self) -> Vec<String> {
        let d = HostConfig::default();
        let mut out = Vec::new();
        let mut flag = |name: &str, value: u64, default: u64| {
            if value != default {
                out.push(name.to_string());
                out.push(value.to_string());
            }
        };
        flag("--fuel-per-step", self.fuel_per_step, d.fuel_per_step);
        flag(
            "--max-memory-mb",
            self.max_memory_mb,
            d.max_memory_bytes >> 20,
        );
        flag(
            "--max-host-memory-mb",
            self.max_host_memory_mb,
            d.max_host_bytes >> 20,
        );
        flag("--max-log-kib", self.max_log_kib, d.max_log_bytes >> 10);
        // A module over the default limit needs the same limit to replay.
        flag(
            "--max-module-mb",
            self.max_module_mb,
            d.max_module_bytes >> 20,
        );
        flag(
            "--thread-stack-kib",
            self.thread_stack_kib.into(),
            (d.thread_stack_bytes >> 10).into(),
        );
        flag(
            "--asyncify-buffer-kib",
            self.asyncify_buffer_kib.into(),
            (d.asyncify_buffer_bytes >> 10).into(),
        );
        out
    }
}
