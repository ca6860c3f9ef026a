//! The jobs of the TruSt-style exploration (see the parent module): what
//! a job holds and how much, and where a worker gets its next one, alone
//! or sharing a [`SubtreePool`] with other workers.

use super::graph::Graph;
use super::Trust;
use crate::explorer::partition::Partition;
use crate::explorer::steal::{Payload, Subtree, SubtreePool, Taken};
use crate::explorer::visits::NO_EXPANSION;
use crate::strategy::BoundHit;
use std::sync::Arc;
use wasmrace_trace::mix64;

/// A job: a graph to run, and its place in the one-thread exploration
/// order (see [`Trust::order_key`](crate::Standing::order_key)).
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub(super) graph: Graph,
    pub(super) key: Vec<u32>,
    /// [`bytes`](Self::bytes), counted once: a job is counted in and out
    /// of the frontier.
    size: u64,
}

impl Job {
    /// The job that runs `graph`, at `key`.
    pub(super) fn new(graph: Graph, key: Vec<u32>) -> Job {
        // The allocator's header, per allocation.
        const HEADER: usize = 16;
        let size = graph.bytes() + key.capacity() * 4 + HEADER + std::mem::size_of::<Job>();
        Job {
            graph,
            key,
            size: size as u64,
        }
    }

    /// About the bytes the job holds: its events and its order, with the
    /// overhead of their collections.
    pub(super) fn bytes(&self) -> u64 {
        self.size
    }

    /// The whole exploration: the empty graph, with the pool's root key.
    pub(super) fn root() -> Job {
        Job::new(Graph::default(), vec![0])
    }

    /// The job another worker handed over through the pool; the pool's
    /// root (no payload) is the empty graph.
    pub(super) fn from_subtree(t: Subtree) -> Job {
        let graph = (t.payload)
            .and_then(|p| p.0.downcast::<Graph>().ok())
            .map(Arc::unwrap_or_clone)
            .unwrap_or_default();
        Job::new(graph, t.key)
    }

    /// This job as a subtree for the pool.
    pub(super) fn into_subtree(self) -> Subtree {
        Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: self.key,
            exp: NO_EXPANSION,
            then: Vec::new(),
            payload: Some(Payload(Arc::new(self.graph))),
        }
    }
}

/// How many levels below the root the job at `key` is (each level adds
/// two numbers to the key, see [`Trust::order_key`](crate::Standing::order_key)).
pub(super) fn depth(key: &[u32]) -> usize {
    key.len().saturating_sub(1) / 2
}

/// Whether the job at `key` is `partition`'s: its key hashes to it.
pub(super) fn owns(partition: Partition, key: &[u32]) -> bool {
    let hash = (key.iter()).fold(0, |h: u64, &k| mix64(h ^ u64::from(k)));
    hash % u64::from(partition.count) == u64::from(partition.index)
}

/// A worker's view of the pool it shares (see [`Trust::next_shared`]).
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Changes whenever the next job does not directly follow the last
    /// in the exploration order (one taken from the pool).
    pub(super) stretch: u64,
    /// Jobs after this key are not run (a bug's, or the budget's cut).
    pub(super) threshold: Option<Vec<u32>>,
    pub(super) threshold_seen: u64,
    pub(super) told_abandoned: bool,
    /// The pool said the run is over, and whether everything was explored.
    pub(super) done: Option<bool>,
}

impl Trust {
    /// The jobs outgrew `--frontier-mb`: every worker stops.
    pub(super) fn outgrown(&mut self) {
        self.full = true;
        self.jobs.clear();
        self.frontier = 0;
        if let Some(pool) = &self.pool {
            pool.stop_at(self.frontier_hit());
        }
    }

    /// The bound `--frontier-mb` sets, as reports name it.
    pub(super) fn frontier_hit(&self) -> BoundHit {
        BoundHit {
            bound: "job memory (MiB)",
            value: self.max_frontier >> 20,
            knob: "--frontier-mb",
        }
    }

    /// Takes job `at` off this worker's stack.
    pub(super) fn take_own(&mut self, at: usize) -> Job {
        let job = self.jobs.swap_remove(at);
        self.frontier = self.frontier.saturating_sub(job.bytes());
        job
    }

    /// The next job to run, `None` when there is none.
    pub(super) fn next_job(&mut self) -> Option<Job> {
        if let Some(pool) = self.pool.clone() {
            self.started = true;
            return self.next_shared(&pool);
        }
        if !std::mem::replace(&mut self.started, true) {
            return Some(Job::root());
        }
        if self.jobs.is_empty() {
            return None;
        }
        let at = if self.shuffle == 0 {
            self.jobs.len() - 1
        } else {
            // xorshift: any order will do, as long as it is not the stack's.
            self.shuffle ^= self.shuffle << 13;
            self.shuffle ^= self.shuffle >> 7;
            self.shuffle ^= self.shuffle << 17;
            (self.shuffle % self.jobs.len() as u64) as usize
        };
        Some(self.take_own(at))
    }

    /// The next job of a worker sharing `pool`: its own next, unless a
    /// bug or the budget's cut made it useless; the older half of its own
    /// goes to the pool when another worker waits; from the pool once it
    /// has none.
    ///
    /// A worker's own jobs are a stack whose keys fall from bottom to top,
    /// and it runs the top first, so its executions follow one another in
    /// the exploration order (one stretch, see
    /// [`steal`](crate::explorer::steal)) until it takes a job from the
    /// pool: what it donates is its bottom, the jobs that come after all
    /// it keeps. For the same reason a threshold below the top is below
    /// all of them.
    pub(super) fn next_shared(&mut self, pool: &SubtreePool) -> Option<Job> {
        let sh = &mut self.shared;
        if let Some(threshold) = pool.threshold_moved(&mut sh.threshold_seen) {
            sh.threshold = threshold;
        }
        let late = |j: &Job| sh.threshold.as_ref().is_some_and(|t| j.key > *t);
        if self.jobs.last().is_some_and(late) {
            self.jobs.clear();
            self.frontier = 0;
            if !std::mem::replace(&mut sh.told_abandoned, true) {
                pool.abandoned();
            }
        }
        if self.jobs.len() > 1 && pool.hungry() {
            let half = self.jobs.len() / 2;
            let given: Vec<Job> = self.jobs.drain(..half).collect();
            let bytes: u64 = given.iter().map(Job::bytes).sum();
            self.frontier = self.frontier.saturating_sub(bytes);
            pool.give(given.into_iter().map(Job::into_subtree).collect());
        }
        if !self.jobs.is_empty() {
            return Some(self.take_own(self.jobs.len() - 1));
        }
        match pool.take() {
            Taken::Subtree(t) => {
                self.shared.stretch += 1;
                Some(Job::from_subtree(t))
            }
            Taken::Done { exhausted } => {
                self.shared.done = Some(exhausted);
                None
            }
            Taken::Stopped => None,
        }
    }
}
