//! The wasmrace side: the guest in guest/ (built by build.rs, embedded
//! here), explored through the host crate's public API exactly as an
//! embedder would (crates/wasmrace-host/examples/embed.rs).

use crate::Test;
use std::time::{Duration, Instant};
use wasmrace_explore::strategies::{Dfs, DfsOptions, Dpor, RandomWalk};
use wasmrace_explore::{Config, Explorer, Strategy};
use wasmrace_host::{Guest, HostConfig, HostError};

const GUEST_WASM: &[u8] = include_bytes!(env!("PEERS_GUEST_WASM"));

/// Which version of a test the guest runs: as written, or the `_pregrown`
/// variant that grows the heap before its first operation (only the
/// bug-free tests have one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heap {
    AsWritten,
    Pregrown,
}

pub struct Wasm {
    guest: Guest,
    /// Loading the guest: validation, instrumentation and compilation, or a
    /// cache hit (`~/.cache/wasmrace`). Paid once per module, not per test.
    pub load_time: Duration,
}

/// One exploration: executions run, whether the last failed (the explorer
/// stops at the first bug), whether DFS exhausted the space, and the time
/// from instantiating the test to the end of the exploration.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub executions: u64,
    pub bug: bool,
    pub exhausted: bool,
    pub elapsed: Duration,
}

impl Wasm {
    pub fn load() -> Result<Wasm, HostError> {
        let start = Instant::now();
        let guest = Guest::from_bytes("peers_guest", GUEST_WASM, HostConfig::default())?;
        Ok(Wasm {
            guest,
            load_time: start.elapsed(),
        })
    }

    fn explore(
        &self,
        test: Test,
        heap: Heap,
        strategy: &mut dyn Strategy,
        max_executions: u64,
    ) -> Result<Run, HostError> {
        let start = Instant::now();
        let name = match heap {
            Heap::AsWritten => test.name(),
            Heap::Pregrown => format!("{}_pregrown", test.name()),
        };
        let program = self.guest.program(&name)?;
        // The explorer's defaults (snapshot policy, step bound) otherwise:
        // what `wasmrace check` runs.
        let config = Config {
            max_executions,
            ..Config::default()
        };
        let mut explorer = Explorer::new(program, config);
        let report = explorer.run(strategy).map_err(|e| HostError::Runtime {
            message: e.to_string(),
        })?;
        Ok(Run {
            executions: report.executions,
            bug: report.first_bug().is_some(),
            exhausted: report.exhausted,
            elapsed: start.elapsed(),
        })
    }

    /// Concuerror-style DFS: every interleaving when `preemption_bound` is
    /// `None`, else iterative preemption bounding up to the bound.
    pub fn dfs(
        &self,
        test: Test,
        heap: Heap,
        preemption_bound: Option<u32>,
    ) -> Result<Run, HostError> {
        let mut dfs = Dfs::new(DfsOptions { preemption_bound });
        self.explore(test, heap, &mut dfs, u64::MAX)
    }

    /// Optimal DPOR (`--strategy dpor --unbounded`): each Mazurkiewicz
    /// trace once, as loom's DPOR aims to.
    pub fn dpor(&self, test: Test, heap: Heap) -> Result<Run, HostError> {
        let mut dpor = Dpor::optimal();
        self.explore(test, heap, &mut dpor, u64::MAX)
    }

    /// Seeded uniform random walk, at most `iterations` executions, stopping
    /// at the first bug.
    pub fn random(
        &self,
        test: Test,
        heap: Heap,
        seed: u64,
        iterations: u64,
    ) -> Result<Run, HostError> {
        let mut walk = RandomWalk::new(seed);
        self.explore(test, heap, &mut walk, iterations)
    }
}
