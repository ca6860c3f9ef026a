//! The schedule-file target: the schedules of real bugs (found once per
//! campaign on a few guests), mutated as text (byte flips, cuts, splices
//! from another schedule) or as JSON (thread names, alternatives, steps
//! dropped, repeated or multiplied, another test or module, odd versions),
//! then read (`Schedule::parse`, or `Schedule::read` from a file) and
//! replayed. A mutation that keeps the module, the test and the steps must
//! replay to the recorded failure. Now and then the file is no regular
//! file at all (a FIFO, a folder, a link to a device) or one past
//! `SCHEDULE_MAX_BYTES`: reading it must be one refusal, at once (a FIFO
//! opened for reading would hang, which the watchdog reports).

use crate::mutate::mutate;
use crate::pipeline::host_config;
use crate::{typed, Limits, Outcomes, Target};
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use wasmrace_host::{
    check, replay, CheckOptions, Config, Failure, Guest, Schedule, SCHEDULE_MAX_BYTES,
};

/// The guests whose bugs give the seed schedules.
const GUESTS: &[&str] = &["lost_update", "deadlock01", "choose_bug"];

/// A seed: a guest and the schedule of a bug found on it.
struct Seed {
    guest: Guest,
    schedule: Schedule,
    failure: Failure,
}

pub(crate) struct Schedules {
    limits: Limits,
    seeds: Vec<Seed>,
    file: PathBuf,
}

impl Schedules {
    pub(crate) fn new(limits: &Limits, scratch: &Path) -> Result<Self, String> {
        let mut seeds = Vec::new();
        for name in GUESTS {
            let config = host_config(limits, Some(scratch.join("module-cache")));
            let guest =
                Guest::load(&wasmrace_fixtures::path(name), config).map_err(|e| e.to_string())?;
            seeds.extend(bugs_of(&guest)?);
        }
        if seeds.is_empty() {
            return Err("no seed guest has a bug to make schedules from".into());
        }
        Ok(Schedules {
            limits: limits.clone(),
            seeds,
            file: scratch.join("fuzz.schedule.json"),
        })
    }
}

/// The schedule of every test of `guest` where the default check finds a bug.
fn bugs_of(guest: &Guest) -> Result<Vec<Seed>, String> {
    let opts = CheckOptions {
        explore: Config {
            max_executions: 2_000,
            ..Config::default()
        },
        ..CheckOptions::default()
    };
    let mut seeds = Vec::new();
    for test in guest.tests() {
        let outcome = check(guest, test, &opts).map_err(|e| e.to_string())?;
        if let Some(bug) = outcome.bug {
            seeds.push(Seed {
                guest: guest.clone(),
                failure: bug.failure,
                schedule: bug.schedule,
            });
        }
    }
    Ok(seeds)
}

impl Target for Schedules {
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
        clear(&self.file)?;
        if rng.random_bool(0.05) {
            return odd_file(&self.file, rng, out);
        }
        let seed = &self.seeds[rng.random_range(0..self.seeds.len())];
        let (text, keeps_meaning) = if rng.random_bool(0.4) {
            (self.text_mutant(&seed.schedule, rng), false)
        } else {
            let mut v = serde_json::to_value(&seed.schedule).map_err(|e| e.to_string())?;
            let keeps = json_mutant(&mut v, &self.seeds, rng);
            (v.to_string().into_bytes(), keeps)
        };
        let parsed = if rng.random_bool(0.2) || std::str::from_utf8(&text).is_err() {
            std::fs::write(&self.file, &text).map_err(|e| e.to_string())?;
            Schedule::read(&self.file)
        } else {
            Schedule::parse(std::str::from_utf8(&text).unwrap_or_default(), "fuzz")
        };
        let schedule = match parsed {
            Ok(s) => s,
            Err(e) => {
                let msg = e.to_string();
                if msg.contains('\n') {
                    return Err(format!("schedule error is not one line: {msg:?}"));
                }
                out.push("parse: error".into());
                return Ok(());
            }
        };
        out.push("parse: ok".into());
        let guest = &seed.guest;
        match replay(guest, &schedule, self.limits.max_steps) {
            Err(e) => out.push(format!("replay: {}", typed(&e)?)),
            Ok(r) if keeps_meaning && r.failure.as_ref() != Some(&seed.failure) => {
                return Err(format!(
                    "an unchanged schedule of `{}` replays as {:?}, not `{}`",
                    schedule.test,
                    r.failure.map(|f| f.to_string()),
                    seed.failure
                ));
            }
            Ok(r) => out.push(match (r.failure, r.divergence) {
                (_, Some(_)) => "replay: diverged".into(),
                (Some(f), None) => format!("replay: failure ({})", f.kind.name()),
                (None, None) => "replay: no failure".into(),
            }),
        }
        Ok(())
    }
}

/// Removes whatever the last input left at `path` (a FIFO or a folder
/// included: writing a FIFO would block).
fn clear(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.map_err(|e| format!("cannot clear {}: {e}", path.display()))
}

/// Puts at `path` what is not a schedule file wasmrace may read (a FIFO, a
/// folder, a link to a device, a file one byte past the cap, sparse) and
/// checks that `Schedule::read` refuses it in one line.
fn odd_file(path: &Path, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
    let (made, what) = match rng.random_range(0..4) {
        0 => (make_fifo(path), "fifo"),
        1 => (
            std::fs::create_dir(path).map_err(|e| e.to_string()),
            "folder",
        ),
        2 => (device_link(path), "device"),
        _ => (sparse(path, SCHEDULE_MAX_BYTES + 1), "too large"),
    };
    if made.is_err() {
        // The platform has no FIFOs or devices: nothing to read.
        out.push("odd file: not made".into());
        return Ok(());
    }
    match Schedule::read(path) {
        Ok(_) => Err(format!("a schedule file that is {what} was read")),
        Err(e) if e.to_string().contains('\n') => Err(format!("not one line: {e}")),
        Err(_) => {
            out.push(format!("odd file: {what} refused"));
            Ok(())
        }
    }
}

fn make_fifo(path: &Path) -> Result<(), String> {
    let status = std::process::Command::new("mkfifo").arg(path).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => Err("no mkfifo".into()),
    }
}

fn device_link(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/dev/zero", path).map_err(|e| e.to_string())
    }
    #[cfg(not(unix))]
    {
        Err(format!("no device at {}", path.display()))
    }
}

fn sparse(path: &Path, len: u64) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    file.set_len(len).map_err(|e| e.to_string())
}

impl Schedules {
    /// The file's text with bytes flipped, cut or spliced from another
    /// seed's text.
    fn text_mutant(&self, s: &Schedule, rng: &mut ChaCha8Rng) -> Vec<u8> {
        let mut text = s.to_json().into_bytes();
        let donors: Vec<String> = self.seeds.iter().map(|d| d.schedule.to_json()).collect();
        let donors: Vec<&[u8]> = donors.iter().map(|d| d.as_bytes()).collect();
        mutate(&mut text, &donors, rng);
        text
    }
}

/// Changes the schedule's JSON one to three times; true when every change
/// keeps what replay does (the module, the test and the steps).
fn json_mutant(v: &mut Value, seeds: &[Seed], rng: &mut impl RngCore) -> bool {
    let mut keeps = true;
    for _ in 0..rng.random_range(1..=3) {
        keeps &= json_mutate_once(v, seeds, rng);
    }
    keeps
}

fn json_mutate_once(v: &mut Value, seeds: &[Seed], rng: &mut impl RngCore) -> bool {
    let Some(obj) = v.as_object_mut() else {
        return false;
    };
    let odd_value = |rng: &mut dyn RngCore| -> Value {
        match rng.random_range(0..8) {
            0 => Value::Null,
            1 => json!(-1),
            2 => json!(u64::MAX),
            3 => json!(1e300),
            4 => json!("main.1"),
            5 => json!([]),
            6 => json!({"a": [1, 2]}),
            _ => json!("\u{1b}[31m/../../x\n"),
        }
    };
    match rng.random_range(0..11) {
        // What replay ignores: the record of who found it, and how.
        0 => {
            obj.insert("strategy".into(), json!("nobody"));
            obj.insert("seed".into(), json!(rng.random::<u64>()));
            true
        }
        // Options are for the record today, but a schedule may come to
        // carry settings replay uses: no claim on what odd ones do.
        1 => {
            obj.insert("options".into(), odd_value(rng));
            false
        }
        2 => {
            let key = [
                "format",
                "version",
                "module_blake3",
                "test",
                "steps",
                "seed",
            ][rng.random_range(0..6)];
            if rng.random_bool(0.5) {
                obj.remove(key);
            } else {
                obj.insert(key.into(), odd_value(rng));
            }
            false
        }
        3 => {
            obj.insert("failure".into(), odd_value(rng));
            false
        }
        4 => {
            let other = &seeds[rng.random_range(0..seeds.len())];
            obj.insert("module_blake3".into(), json!(other.guest.module_hash()));
            obj.insert("test".into(), json!(other.schedule.test));
            false
        }
        _ => {
            let Some(steps) = obj.get_mut("steps").and_then(Value::as_array_mut) else {
                return false;
            };
            mutate_steps(steps, rng);
            false
        }
    }
}

/// Changes the decisions: a thread name, an alternative, a step dropped,
/// repeated or moved, the list cut or made very long.
fn mutate_steps(steps: &mut Vec<Value>, rng: &mut impl RngCore) {
    let len = steps.len();
    let at = rng.random_range(0..len.max(1));
    match rng.random_range(0..7) {
        0 if len > 0 => {
            let names = [
                "main", "main.1", "main.2", "main.1.1", "main.99", "main.0", "x",
            ];
            let name = names[rng.random_range(0..names.len())];
            steps[at]["thread"] = json!(name);
        }
        1 if len > 0 => {
            let alt = [1u64, 2, 7, u32::MAX as u64, u32::MAX as u64 + 1][rng.random_range(0..5)];
            steps[at]["alt"] = json!(alt);
        }
        2 if len > 0 => {
            steps.remove(at);
        }
        3 if len > 0 => {
            let s = steps[at].clone();
            steps.insert(at, s);
        }
        4 if len > 1 => {
            let other = rng.random_range(0..len);
            steps.swap(at, other);
        }
        5 => steps.truncate(at),
        _ => {
            let n = rng.random_range(1..=50_000);
            let step = steps.get(at).cloned().unwrap_or(json!({"thread": "main"}));
            steps.extend(std::iter::repeat_n(step, n));
        }
    }
}
