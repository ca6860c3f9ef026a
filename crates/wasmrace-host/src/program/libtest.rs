//! Loading a guest, and a std guest's tests: an SDK guest's are its
//! `wasmrace_test_*` exports, a std command module is one test (`main`),
//! and a libtest harness (`cargo test`'s test binary) is run once with
//! `--list` (and `--list --ignored`) to learn its tests, each then checked
//! as one wasmrace test (`--exact NAME --test-threads=1`). The listing
//! runs the guest, so it lives here, on the program side.

use super::WasmProgram;
use crate::config::HostConfig;
use crate::error::HostError;
use crate::guest::{Guest, LIST_PREFIX};
use std::path::Path;
use std::sync::Arc;
use wasmrace_explore::{Program, Status};
use wasmrace_trace::Decision;

/// Steps the listing run may take: listing touches a few locks.
const LIST_STEPS: u64 = 1_000_000;

impl Guest {
    /// Loads a module from a file.
    pub fn load(path: &Path, config: HostConfig) -> Result<Guest, HostError> {
        let bytes = crate::load::read_module(path, config.max_module_bytes)?;
        let name = path.display().to_string();
        Guest::from_bytes(&name, &bytes, config)
    }

    /// Loads a module from bytes; `name` is used in messages.
    pub fn from_bytes(name: &str, bytes: &[u8], config: HostConfig) -> Result<Guest, HostError> {
        let guest = Guest::assemble(name, bytes, config)?;
        match &guest.inner.analysis.std {
            Some(std) if std.harness => guest.with_listed_tests(),
            _ => Ok(guest),
        }
    }

    /// Whether the module is a std guest (`wasm32-wasip1-threads`: it
    /// imports WASI), rewritten at load time (docs/std-guests.md).
    pub fn is_std(&self) -> bool {
        self.inner.analysis.std.is_some()
    }

    /// The tests libtest would skip (`#[ignore]`): a std harness's, never
    /// an SDK guest's. Checking one runs it all the same.
    pub fn ignored_tests(&self) -> &[String] {
        match &self.inner.analysis.std {
            Some(std) => &std.ignored,
            None => &[],
        }
    }

    /// The harness's tests, listed by running it: every test, and which
    /// are ignored.
    fn with_listed_tests(self) -> Result<Guest, HostError> {
        let all = list(&self, "")?;
        let ignored = list(&self, " --ignored")?;
        let mut inner = Arc::try_unwrap(self.inner).map_err(|_| HostError::Runtime {
            message: "the guest was shared while its tests were listed".into(),
        })?;
        if all.is_empty() {
            return Err(HostError::NoHarnessTests { name: inner.name });
        }
        inner.analysis.tests = all;
        if let Some(std) = &mut inner.analysis.std {
            std.ignored = ignored;
        }
        Ok(Guest {
            inner: Arc::new(inner),
        })
    }
}

/// Runs the harness with `--list --format terse` and `more` arguments,
/// always taking the first enabled thread, and reads the tests from its
/// output (`NAME: test` lines), sorted.
fn list(guest: &Guest, more: &str) -> Result<Vec<String>, HostError> {
    let mut p = WasmProgram::new_traced(guest.inner.clone(), &format!("{LIST_PREFIX}{more}"))?;
    while matches!(p.status(), Status::Running) && p.steps() < LIST_STEPS {
        let Some(v) = p.threads().iter().find(|v| v.pending.enabled) else {
            break;
        };
        let d = Decision::new(v.tid, 0);
        p.step(d)?;
    }
    if let Status::Failed(f) = p.status() {
        return Err(HostError::Runtime {
            message: format!(
                "listing the tests of `{}` (`--list`) failed: {}",
                guest.name(),
                f.message
            ),
        });
    }
    let mut tests: Vec<String> = p
        .logs()
        .iter()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(String::from)
        .collect();
    tests.sort();
    tests.dedup();
    Ok(tests)
}
