//! The module cache trusts no file: a cached entry with flipped bytes, cut
//! short, or holding another module's valid entry is a miss that is
//! rebuilt and replaced, and every load answers for its own module.

use super::cache_dir;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use wasmrace_host::{check, CheckOptions, Guest, HostConfig};

fn cfg(dir: &Path) -> HostConfig {
    HostConfig {
        cache_dir: Some(dir.to_path_buf()),
        ..HostConfig::default()
    }
}

/// The one entry file with extension `ext` in `dir`.
fn entry(dir: &Path, ext: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

/// A fresh cache directory `name` holding the entries of fixture `fixture`,
/// built once per fixture and copied: instrumenting and compiling is most
/// of a test's time.
fn seeded(name: &str, fixture: &str) -> PathBuf {
    static LOST_UPDATE: OnceLock<PathBuf> = OnceLock::new();
    static MUTEX_COUNTER: OnceLock<PathBuf> = OnceLock::new();
    let cell = match fixture {
        "lost_update" => &LOST_UPDATE,
        _ => &MUTEX_COUNTER,
    };
    let template = cell.get_or_init(|| {
        let d = cache_dir(&format!("template-{fixture}"));
        let g = Guest::load(&wasmrace_fixtures::path(fixture), cfg(&d)).unwrap();
        assert!(!g.from_cache());
        d
    });
    let dir = cache_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    for ext in ["wasm", "cwasm"] {
        let from = entry(template, ext);
        std::fs::copy(&from, dir.join(from.file_name().unwrap())).unwrap();
    }
    dir
}

/// Loads fixture `name` with the cache in `dir`, checks `test` with the
/// default options (bounded to `max_executions`) and returns whether it came
/// from the cache and whether a bug was found.
fn load_and_check(dir: &Path, name: &str, test: &str, max_executions: u64) -> (bool, bool) {
    let g = Guest::load(&wasmrace_fixtures::path(name), cfg(dir)).unwrap();
    let mut opts = CheckOptions::default();
    opts.explore.max_executions = max_executions;
    let out = check(&g, test, &opts).unwrap();
    (g.from_cache(), out.bug.is_some())
}

/// Lost_update's load and check in `dir`: (from the cache, bug found).
fn lost_update(dir: &Path) -> (bool, bool) {
    load_and_check(dir, "lost_update", "lost_update", 50)
}

/// Mutex_counter's load and check in `dir`, 50 executions at most.
fn mutex_counter(dir: &Path) -> (bool, bool) {
    load_and_check(dir, "mutex_counter", "mutex_counter", 50)
}

/// `n` positions spread over `len` bytes, first and last included.
fn positions(len: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| i * (len - 1) / (n - 1)).collect()
}

/// The damaged copies of `good` a test writes over an entry: a one-bit flip
/// in the digest and `flips` more spread over the file, then the
/// file cut inside the header, at its end (an empty payload), in the middle
/// and one byte short; `all_cuts: false` keeps the last two.
fn damaged(good: &[u8], flips: usize, all_cuts: bool) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // Byte 20 is in the header's digest; the spread covers the magic (byte
    // 0) and the payload.
    let spread = positions(good.len(), flips);
    for (i, p) in std::iter::once(20).chain(spread).enumerate() {
        let mut bad = good.to_vec();
        bad[p] ^= 1 << (i % 8);
        out.push((format!("flip at {p}"), bad));
    }
    let cuts = [0, 7, 40, good.len() / 2, good.len() - 1];
    for len in cuts.into_iter().skip(if all_cuts { 0 } else { 3 }) {
        out.push((format!("cut to {len}"), good[..len].to_vec()));
    }
    out
}

/// Writes each damaged copy of the `ext` entry of lost_update over it (the
/// other entry kept intact, or removed so the damaged one is read), loads
/// and checks: the bug is found, the load was no cache hit, the file was
/// replaced, and the next load is a hit that finds the bug again. Each
/// rebuild compiles (and, for `wasm`, instruments) the module again, which
/// bounds how many copies a test can afford; the unit tests of `cache.rs`
/// flip every byte of an entry.
fn damage_and_reload(name: &str, ext: &str, flips: usize, keep_other: bool) {
    let dir = seeded(name, "lost_update");
    assert_eq!(lost_update(&dir), (true, true));
    let path = entry(&dir, ext);
    let other = entry(&dir, if ext == "wasm" { "cwasm" } else { "wasm" });
    let good = std::fs::read(&path).unwrap();
    for (what, bad) in damaged(&good, flips, keep_other) {
        if !keep_other {
            std::fs::remove_file(&other).unwrap();
        }
        std::fs::write(&path, &bad).unwrap();
        let first = lost_update(&dir);
        assert_eq!(first, (false, true), "{what}: rebuilt, bug found");
        assert_ne!(std::fs::read(&path).unwrap(), bad, "{what}: entry replaced");
        let again = lost_update(&dir);
        assert_eq!(again, (true, true), "{what}: the rewritten entry is used");
    }
}

#[test]
fn a_damaged_compiled_entry_is_rebuilt_and_replaced() {
    damage_and_reload("damaged-cwasm", "cwasm", 12, true);
}

#[test]
fn a_damaged_instrumented_entry_is_rebuilt_and_replaced() {
    // Without a compiled entry, the instrumented one is read; each rebuild
    // runs wasm-opt (most of a second), so fewer copies than for the
    // compiled entry.
    damage_and_reload("damaged-wasm", "wasm", 2, false);
}

/// Swaps the `ext` entries of lost_update and mutex_counter (each a valid
/// entry of the other module), then checks each answers for itself.
fn swap_and_check(ext: &str) {
    let a = seeded(&format!("swap-{ext}-a"), "lost_update");
    let b = seeded(&format!("swap-{ext}-b"), "mutex_counter");
    assert_eq!(lost_update(&a), (true, true));
    assert_eq!(mutex_counter(&b), (true, false));
    let (pa, pb) = (entry(&a, ext), entry(&b, ext));
    let (ea, eb) = (std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());
    if ext == "wasm" {
        std::fs::remove_file(entry(&a, "cwasm")).unwrap();
        std::fs::remove_file(entry(&b, "cwasm")).unwrap();
    }
    std::fs::write(&pa, &eb).unwrap();
    std::fs::write(&pb, &ea).unwrap();
    assert_eq!(lost_update(&a), (false, true));
    assert_eq!(mutex_counter(&b), (false, false));
    assert_ne!(
        std::fs::read(&pa).unwrap(),
        eb,
        "lost_update's entry replaced"
    );
    assert_eq!(lost_update(&a), (true, true));
    assert_eq!(mutex_counter(&b), (true, false));
}

#[test]
fn a_compiled_entry_of_another_module_is_never_used() {
    swap_and_check("cwasm");
}

#[test]
fn an_instrumented_entry_of_another_module_is_never_used() {
    swap_and_check("wasm");
}
