//! The cache-entry target: the module cache of a real guest with its
//! entries (instrumented `.wasm`, compiled `.cwasm`) corrupted (bytes
//! flipped in the header or the payload, cut, spliced), swapped for another
//! module's or the other kind's entry, emptied, or replaced by a directory
//! or a device. Loading the guest through that cache must still succeed and
//! give the same tests and the same verdict as without a cache, and the bad
//! entry must have been replaced (the next load comes from the cache).

use crate::mutate::mutate;
use crate::pipeline::host_config;
use crate::{typed, Limits, Outcomes, Target};
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use wasmrace_host::{check, CheckOptions, Config, Failure, Guest, StrategyChoice};

/// The guest whose entries are corrupted, and the one whose entries are
/// swapped in.
const GUEST: &str = "lost_update";
const OTHER: &str = "deadlock01";

/// What a load must give whatever the cache holds.
#[derive(Debug, PartialEq)]
struct Verdict {
    tests: Vec<String>,
    failure: Option<Failure>,
}

pub(crate) struct CacheEntries {
    limits: Limits,
    dir: PathBuf,
    /// The guest's entry files and their good contents.
    entries: Vec<(PathBuf, Vec<u8>)>,
    /// Bytes to swap in: the other guest's entries and the guest's own.
    donors: Vec<Vec<u8>>,
    reference: Verdict,
}

impl CacheEntries {
    pub(crate) fn new(limits: &Limits, scratch: &Path) -> Result<Self, String> {
        let dir = scratch.join("cache");
        let other_dir = scratch.join("cache-other");
        let path = wasmrace_fixtures::path(GUEST);
        let uncached = Guest::load(&path, host_config(limits, None)).map_err(|e| e.to_string())?;
        let reference = verdict(&uncached).map_err(|e| e.to_string())?;
        Guest::load(&path, host_config(limits, Some(dir.clone()))).map_err(|e| e.to_string())?;
        Guest::load(
            &wasmrace_fixtures::path(OTHER),
            host_config(limits, Some(other_dir.clone())),
        )
        .map_err(|e| e.to_string())?;
        let entries = read_entries(&dir)?;
        if entries.len() != 2 {
            return Err(format!(
                "expected two cache entries in `{}`, found {}",
                dir.display(),
                entries.len()
            ));
        }
        let mut donors: Vec<Vec<u8>> = read_entries(&other_dir)?.into_iter().map(|e| e.1).collect();
        donors.extend(entries.iter().map(|e| e.1.clone()));
        Ok(CacheEntries {
            limits: limits.clone(),
            dir,
            entries,
            donors,
            reference,
        })
    }
}

/// The entry files in `dir`: the compiled (`.cwasm`) ones first, then by
/// name. (The compiled entry's name is not the instrumented one's: its key
/// also holds the memory room of `load/headroom.rs`.)
fn read_entries(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort_by_key(|p| (p.extension().is_none_or(|e| e != "cwasm"), p.clone()));
    paths
        .into_iter()
        .map(|p| {
            std::fs::read(&p)
                .map(|b| (p.clone(), b))
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// The guest's tests and the verdict of a fixed DFS check of its first.
fn verdict(guest: &Guest) -> Result<Verdict, wasmrace_host::HostError> {
    let opts = CheckOptions {
        strategy: StrategyChoice::named("dfs"),
        seed: 0,
        explore: Config {
            max_executions: 100,
            ..Config::default()
        },
    };
    let test = &guest.tests()[0];
    let outcome = check(guest, test, &opts)?;
    Ok(Verdict {
        tests: guest.tests().to_vec(),
        failure: outcome.bug.map(|b| b.failure),
    })
}

impl CacheEntries {
    /// Puts the good entries back (and nothing else).
    fn restore(&self) -> Result<(), String> {
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
        for (path, bytes) in &self.entries {
            std::fs::write(path, bytes).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Damages the entry at `path`; returns the damage's name and whether a
    /// new entry can be written there afterwards (not over a directory).
    fn damage(&self, path: &Path, rng: &mut impl RngCore) -> Result<(&'static str, bool), String> {
        let io = |e: std::io::Error| format!("cannot damage `{}`: {e}", path.display());
        let good = std::fs::read(path).map_err(io)?;
        let (name, bytes) = match rng.random_range(0..10) {
            0..=2 => {
                let mut b = good;
                let donors: Vec<&[u8]> = self.donors.iter().map(Vec::as_slice).collect();
                mutate(&mut b, &donors, rng);
                ("bytes", b)
            }
            3 | 4 => {
                // The header: the format's magic and the digest.
                let mut b = good;
                let i = rng.random_range(0..b.len().min(40));
                b[i] ^= 1 << rng.random_range(0..8);
                ("header", b)
            }
            5 | 6 => {
                let d = &self.donors[rng.random_range(0..self.donors.len())];
                ("swapped", d.clone())
            }
            7 => ("empty", Vec::new()),
            8 => {
                std::fs::remove_file(path).map_err(io)?;
                std::fs::create_dir(path).map_err(io)?;
                return Ok(("directory", false));
            }
            _ => {
                std::fs::remove_file(path).map_err(io)?;
                special_file(path).map_err(io)?;
                return Ok(("device", true));
            }
        };
        std::fs::write(path, bytes).map_err(io)?;
        Ok((name, true))
    }
}

/// Puts something endless where a file was: `/dev/zero` behind a link.
#[cfg(unix)]
fn special_file(path: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink("/dev/zero", path)
}

#[cfg(not(unix))]
fn special_file(path: &Path) -> std::io::Result<()> {
    std::fs::write(path, b"")
}

impl Target for CacheEntries {
    fn run(&mut self, rng: &mut ChaCha8Rng, out: &mut Outcomes) -> Result<(), String> {
        self.restore()?;
        let mut replaceable = true;
        let which = rng.random_range(0..3usize);
        for (i, (path, _)) in self.entries.iter().enumerate() {
            if which == 2 || which == i {
                let (name, ok) = self.damage(path, rng)?;
                out.push(format!("damage: {name}"));
                // Only the compiled entry (sorted first) decides whether
                // the next load comes from the cache.
                replaceable &= ok || i != 0;
            }
        }
        let config = host_config(&self.limits, Some(self.dir.clone()));
        let path = wasmrace_fixtures::path(GUEST);
        let guest = match Guest::load(&path, config.clone()) {
            Ok(g) => g,
            Err(e) => {
                return Err(format!(
                    "a damaged cache entry fails the load: {} ({e})",
                    typed(&e)?
                ))
            }
        };
        out.push(format!("load: from cache {}", guest.from_cache()));
        let got = verdict(&guest).map_err(|e| format!("check failed: {e}"))?;
        if got != self.reference {
            return Err(format!(
                "a damaged cache changed the verdict: {got:?}, not {:?}",
                self.reference
            ));
        }
        let again = Guest::load(&path, config).map_err(|e| e.to_string())?;
        if replaceable && !again.from_cache() {
            return Err("the damaged entry was not replaced: the next load compiled again".into());
        }
        out.push("verdict: same".into());
        Ok(())
    }
}
