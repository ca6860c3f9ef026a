//! Host bounds and knobs. Every bound is a field with a documented default
//! and a CLI flag; a run that hits one names the flag that raises it.

use std::path::PathBuf;
use wasmrace_trace::{DataRaces, ScheduleSettings};

/// How the host loads and runs a guest: per-step fuel, memory limits,
/// thread slot sizes, the module cache and `wasm-opt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// Wasm instructions one step may run before it is declared a runaway
    /// (a loop with no scheduling point). Fuel, not wall-clock time, so that
    /// outcomes are deterministic. `--fuel-per-step`, default 50,000,000.
    pub fuel_per_step: u64,
    /// Guest linear memory limit in bytes. `--max-memory-mb`, default 256 MiB.
    pub max_memory_bytes: u64,
    /// What a guest can make the host hold, in bytes: message contents,
    /// the bytes of pending operations, registered names, table entries,
    /// objects and thread records, as `World` counts them (its constants
    /// say what each costs beyond its bytes). An execution that passes it
    /// fails with a memory-limit failure naming the flag, instead of
    /// exhausting the host. `--max-host-memory-mb`, default 256 MiB.
    pub max_host_bytes: u64,
    /// Log bytes (`wasmrace::log`) a traced execution keeps; lines past it
    /// are dropped and the trace says so once, naming the flag. Logs are
    /// only kept when tracing, so a limit reached there must not change the
    /// verdict exploration found: dropping is the one consistent choice.
    /// The object states a traced execution records per step
    /// (`TraceEvent::state`) have a budget of the same size of their own.
    /// `--max-log-kib`, default 1 MiB.
    pub max_log_bytes: u64,
    /// Largest module file the host reads, in bytes: a path naming
    /// something huge (or endless, like a device) fails at once instead of
    /// exhausting memory. `--max-module-mb`, default 256 MiB.
    pub max_module_bytes: u64,
    /// Shadow stack of each spawned thread, in bytes. `--thread-stack-kib`,
    /// default 112 KiB (the main thread keeps the module's own stack).
    pub thread_stack_bytes: u32,
    /// Asyncify buffer per thread: holds the locals of a suspended call
    /// stack. `--asyncify-buffer-kib`, default 16 KiB.
    pub asyncify_buffer_bytes: u32,
    /// Where instrumented and compiled modules are cached; `None` disables
    /// the cache. Default: `$WASMRACE_CACHE_DIR`, else `$XDG_CACHE_HOME/wasmrace`,
    /// else `~/.cache/wasmrace`.
    pub cache_dir: Option<PathBuf>,
    /// The `wasm-opt` binary; default `$WASMRACE_WASM_OPT`, else `wasm-opt` on `PATH`.
    pub wasm_opt: Option<PathBuf>,
    /// Instances of the module alive at once (wasmtime's pool slots, each
    /// reserving address space, not memory): a program holds one, two
    /// while it re-instantiates, and `check --jobs N` holds N programs
    /// (`check_jobs` refuses more than fit, naming this field). The CLI
    /// sizes it to `--jobs`. Default: 4 per core, at least 16.
    pub instance_slots: u32,
    /// Whether plain loads and stores are watched for data races
    /// (`load/races.rs`, `wasmrace_explore::datarace`). `--data-races`,
    /// default `fail`.
    pub data_races: DataRaces,
    /// Distinct races (by their pair of sites) one check keeps under
    /// `--data-races report`: past it, those with the least locations are
    /// kept and the report says the list was cut at this number. Default
    /// 100.
    pub max_data_race_reports: usize,
    /// A std command module's arguments after its name (what
    /// `std::env::args` gives past the first). `--arg`, repeated; none by
    /// default. A libtest harness takes libtest's, an SDK guest none:
    /// loading either with arguments is refused.
    pub args: Vec<String>,
    /// A std guest's environment, `KEY=VALUE` each (`std::env::var`).
    /// `--env`, repeated; empty by default.
    pub env: Vec<String>,
}

/// How much more fuel a step gets with data races detected
/// ([`HostConfig::step_fuel`]): an access of the guest (one instruction
/// and its address) becomes about nine.
pub const RACE_FUEL_FACTOR: u64 = 10;

/// What a fuel failure adds after its message: with races detected, the
/// budget was [`RACE_FUEL_FACTOR`] times larger to leave the detector's own
/// instructions out.
pub(crate) fn fuel_note(config: &HostConfig) -> &'static str {
    match config.data_races {
        DataRaces::Off => "",
        DataRaces::Fail | DataRaces::Report => {
            " (instructions counted without the race detector's)"
        }
    }
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            fuel_per_step: 50_000_000,
            max_memory_bytes: 256 << 20,
            max_module_bytes: 256 << 20,
            max_host_bytes: 256 << 20,
            max_log_bytes: 1 << 20,
            thread_stack_bytes: 112 << 10,
            asyncify_buffer_bytes: 16 << 10,
            cache_dir: default_cache_dir(),
            wasm_opt: None,
            instance_slots: default_instance_slots(),
            data_races: DataRaces::Fail,
            max_data_race_reports: 100,
            args: Vec::new(),
            env: Vec::new(),
        }
    }
}

/// The default [`HostConfig::instance_slots`]: two programs per core (the
/// default `--jobs` of `check` and `bench`), each up to two instances; at
/// least 16.
pub fn default_instance_slots() -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (4 * cores).clamp(16, 4096) as u32
}

/// Slots `jobs` programs need at most (each holds two instances while it
/// re-instantiates).
pub fn instance_slots_for(jobs: u32) -> u32 {
    jobs.saturating_mul(2).saturating_add(2)
}

/// The default module cache: `$WASMRACE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/wasmrace`, else `~/.cache/wasmrace`; `None` when none of
/// these variables is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WASMRACE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("wasmrace"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("wasmrace"))
}

impl HostConfig {
    /// This configuration with room for `jobs` programs at once
    /// ([`instance_slots`](Self::instance_slots) raised to fit, never
    /// lowered).
    pub fn with_slots_for(mut self, jobs: u32) -> Self {
        self.instance_slots = self.instance_slots.max(instance_slots_for(jobs));
        self
    }

    /// The fuel a step gets: [`fuel_per_step`](Self::fuel_per_step) counts
    /// the guest's own instructions, and with data races detected every
    /// plain access runs about seven more (the detector's call, added at
    /// load time), so the budget is [`RACE_FUEL_FACTOR`] times larger: a
    /// step that fits without the detector fits with it.
    pub fn step_fuel(&self) -> u64 {
        match self.data_races {
            DataRaces::Off => self.fuel_per_step,
            DataRaces::Fail | DataRaces::Report => {
                self.fuel_per_step.saturating_mul(RACE_FUEL_FACTOR)
            }
        }
    }

    /// Bytes of one thread slot (Asyncify buffer + stack), whole wasm pages.
    pub(crate) fn slot_bytes(&self) -> u64 {
        let raw = u64::from(self.asyncify_buffer_bytes) + u64::from(self.thread_stack_bytes);
        raw.div_ceil(65536) * 65536
    }
}

impl HostConfig {
    /// What a schedule found under this configuration with `max_steps`
    /// records, for replay: every setting an execution's outcome depends on
    /// (fuel, memory, stack and Asyncify buffer sizes, the host-memory and
    /// log bounds, the step bound, whether races are detected).
    pub fn schedule_settings(&self, max_steps: u64) -> ScheduleSettings {
        ScheduleSettings {
            fuel_per_step: Some(self.fuel_per_step),
            max_steps: Some(max_steps),
            max_memory_bytes: Some(self.max_memory_bytes),
            thread_stack_bytes: Some(self.thread_stack_bytes),
            asyncify_buffer_bytes: Some(self.asyncify_buffer_bytes),
            max_host_bytes: Some(self.max_host_bytes),
            max_log_bytes: Some(self.max_log_bytes),
            data_races: Some(self.data_races),
            args: self.args.clone(),
            env: self.env.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of `ScheduleSettings` is filled: a setting added there
    /// but not here would replay with its default.
    #[test]
    fn schedule_settings_record_every_setting() {
        let c = HostConfig {
            fuel_per_step: 7,
            max_memory_bytes: 8 << 20,
            thread_stack_bytes: 9 << 10,
            asyncify_buffer_bytes: 10 << 10,
            max_host_bytes: 12 << 20,
            max_log_bytes: 13 << 10,
            args: vec!["-v".into()],
            env: vec!["K=V".into()],
            ..HostConfig::default()
        };
        let s = c.schedule_settings(11);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 10, "{json}");
        assert_eq!((&s.args[..], &s.env[..]), (&c.args[..], &c.env[..]));
        assert_eq!(
            (s.fuel_per_step, s.max_steps, s.max_memory_bytes),
            (Some(7), Some(11), Some(8 << 20))
        );
        assert_eq!(
            (s.thread_stack_bytes, s.asyncify_buffer_bytes),
            (Some(9 << 10), Some(10 << 10))
        );
        assert_eq!(
            (s.max_host_bytes, s.max_log_bytes),
            (Some(12 << 20), Some(13 << 10))
        );
    }
}
