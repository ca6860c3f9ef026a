//! One module through the host's public API, as the CLI drives it: load,
//! list the tests, check each (at most two) with a small budget and a
//! strategy the input picks, and replay every bug found from its schedule.

use crate::{typed, Limits, Outcomes};
use rand::{Rng, RngCore};
use wasmrace_host::strategies::StrategyOptions;
use wasmrace_host::{check, replay, CheckOptions, Config, Guest, HostConfig, StrategyChoice};

/// The host configuration of a fuzz input: the limits' fuel and memory,
/// no module cache unless given one.
pub(crate) fn host_config(limits: &Limits, cache: Option<std::path::PathBuf>) -> HostConfig {
    HostConfig {
        fuel_per_step: limits.fuel_per_step,
        max_memory_bytes: limits.max_memory_bytes,
        cache_dir: cache,
        ..HostConfig::default()
    }
}

/// Check options with the limits' bounds, a strategy picked by `rng` among
/// every registered one (with a small state cache where it takes one) and
/// a seed from `rng`.
pub(crate) fn check_options(limits: &Limits, rng: &mut impl RngCore) -> CheckOptions {
    let names = wasmrace_host::STRATEGY_NAMES;
    let name = names[rng.random_range(0..names.len())];
    let strategy = StrategyChoice::named(name).with(&StrategyOptions {
        cache_mb: Some(4),
        ..StrategyOptions::NONE
    });
    CheckOptions {
        strategy,
        seed: rng.random(),
        explore: Config {
            max_executions: limits.max_executions,
            max_steps: limits.max_steps,
            max_saved_bytes: 16 << 20,
            ..Config::default()
        },
    }
}

/// Loads `bytes` and exercises it; `Err` is a broken property.
pub(crate) fn exercise(
    bytes: &[u8],
    config: HostConfig,
    limits: &Limits,
    rng: &mut impl RngCore,
    out: &mut Outcomes,
) -> Result<(), String> {
    keep(bytes);
    let guest = match Guest::from_bytes("fuzz.wasm", bytes, config) {
        Ok(g) => g,
        Err(e) => {
            out.push(format!("load: {}", typed(&e)?));
            return Ok(());
        }
    };
    out.push("load: ok".into());
    let tests: Vec<String> = guest.tests().iter().take(2).cloned().collect();
    for test in tests {
        check_and_replay(&guest, &test, limits, rng, out)?;
    }
    Ok(())
}

/// With `WASMRACE_FUZZ_KEEP=FILE` set, writes the module to `FILE`, so
/// that an input rerun alone (`--start I --inputs 1`) can be studied with
/// the CLI (`wasmrace check FILE`) and `wasm-tools print`.
fn keep(bytes: &[u8]) {
    if let Some(path) = std::env::var_os("WASMRACE_FUZZ_KEEP") {
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("wasmrace-fuzz: cannot keep the module: {e}");
        }
    }
}

/// Checks `test` and replays its bug, if it has one: the replay must
/// reproduce the failure exactly (determinism by construction).
pub(crate) fn check_and_replay(
    guest: &Guest,
    test: &str,
    limits: &Limits,
    rng: &mut impl RngCore,
    out: &mut Outcomes,
) -> Result<(), String> {
    let opts = check_options(limits, rng);
    let outcome = match check(guest, test, &opts) {
        Ok(o) => o,
        Err(e) => {
            out.push(format!("check: {}", typed(&e)?));
            return Ok(());
        }
    };
    let Some(bug) = outcome.bug else {
        out.push("check: no bug".into());
        return Ok(());
    };
    out.push(format!("check: bug ({})", bug.failure.kind.name()));
    match replay(guest, &bug.schedule, limits.max_steps) {
        Ok(r) if r.reproduces(&bug.schedule) => {
            out.push("replay: reproduced".into());
            Ok(())
        }
        Ok(r) => Err(format!(
            "the bug `{}` found by `{}` (seed {}) replays as {:?}, diverging at {:?}",
            bug.failure,
            opts.strategy.name(),
            opts.seed,
            r.failure.map(|f| f.to_string()),
            r.divergence
        )),
        Err(e) => Err(format!(
            "the bug `{}` found by `{}` does not replay: {e}",
            bug.failure,
            opts.strategy.name()
        )),
    }
}
