//! Work stealing within one process (`check --jobs N` for strategies that
//! split by prefix): N workers, each an explorer with its own program
//! instance and its own strategy, share one search tree through a pool of
//! subtrees.
//!
//! A subtree is a prefix of decisions (with each decision's mark, so that
//! its place in the search order is known without running it) and the
//! iteration it belongs to. A worker explores one subtree at a time, below
//! its prefix only (reaching it by replaying the prefix). When some worker
//! is idle and the pool holds fewer subtrees than there are idle workers,
//! a busy worker donates its shallowest untried alternatives between two
//! executions. The subtrees are disjoint and each is explored the same
//! whichever worker explores it, so the executions of the run do not
//! depend on the number of workers, only their distribution does.
//!
//! **Bugs.** The rule is the one partitions merge by
//! ([`BugRank`](super::partition::BugRank)): the bug reported is the one
//! with the least order key, which is the one a single run finds first.
//! When the run stops at its first bug, a worker that finds one publishes
//! its key; subtrees whose keys all come after the least published key are
//! abandoned (their executions cannot be the first bug), and every other
//! subtree is still explored, so when the pool runs dry the least key
//! found is the least key of all.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use wasmrace_trace::Decision;

/// A subtree of the search handed from one worker to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subtree {
    /// The decisions from the initial state to the subtree's root, each with
    /// the strategy's mark of it (its rank, for the order key).
    pub steps: Vec<(Decision, u32)>,
    /// The strategy's iteration the subtree belongs to (DFS's number of
    /// preemptions under a bound; 0 otherwise).
    pub iteration: u32,
    /// Every execution of the subtree has an order key starting with this.
    pub key: Vec<u32>,
}

/// What a worker gets when it asks the pool for work.
#[derive(Debug)]
pub enum Taken {
    /// A subtree to explore.
    Subtree(Subtree),
    /// Nothing is left: every worker is idle and the pool is empty.
    /// `exhausted` is false when subtrees were abandoned after a bug.
    Done {
        /// Whether the whole search space was explored.
        exhausted: bool,
    },
    /// The run was stopped (a bound, an error): leave now.
    Stopped,
}

/// What the lock guards: the subtrees waiting and the least bug key.
#[derive(Debug, Default)]
struct State {
    /// Waiting subtrees by key: the earliest in the search order is taken
    /// first, so the first bug tends to be found early.
    waiting: BTreeMap<Vec<u32>, Subtree>,
    /// Workers waiting in `take`.
    idle: usize,
    /// The least order key of a bug published by `found`.
    best: Option<Vec<u32>>,
    /// Some subtree was abandoned because of `best`.
    abandoned: bool,
    done: bool,
}

/// The pool the workers of one run share; see the module documentation.
#[derive(Debug)]
pub struct SubtreePool {
    state: Mutex<State>,
    wake: Condvar,
    workers: usize,
    /// Mirrors of `State::idle` and the number waiting, read without the
    /// lock between executions.
    idle: AtomicUsize,
    waiting: AtomicUsize,
    has_best: AtomicBool,
    stopped: AtomicBool,
    /// Executions begun by all workers (for `--max-executions`).
    executions: AtomicU64,
    /// Always hungry (see [`SubtreePool::eager`]).
    eager: bool,
}

impl SubtreePool {
    /// A pool for `workers` workers holding the whole search (the root
    /// subtree, the empty prefix).
    pub fn new(workers: usize) -> Arc<Self> {
        let root = Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: vec![0],
        };
        let mut waiting = BTreeMap::new();
        waiting.insert(root.key.clone(), root);
        Arc::new(SubtreePool {
            state: Mutex::new(State {
                waiting,
                ..State::default()
            }),
            wake: Condvar::new(),
            workers: workers.max(1),
            idle: AtomicUsize::new(0),
            waiting: AtomicUsize::new(1),
            has_best: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            executions: AtomicU64::new(0),
            eager: false,
        })
    }

    /// A pool whose workers donate between any two executions, hungry or
    /// not: the same exploration with as many hand-overs as it can have
    /// (tests: on small models, one worker is often done before the others
    /// start, and would never donate).
    pub fn eager(workers: usize) -> Arc<Self> {
        let mut pool = Arc::into_inner(Self::new(workers)).expect("just made");
        pool.eager = true;
        Arc::new(pool)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked holding the lock left the state whole
        // (every update is one assignment); the run ends anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a busy worker should donate: some worker waits for work and
    /// the pool holds fewer subtrees than there are waiting workers.
    pub fn hungry(&self) -> bool {
        if self.eager {
            return true;
        }
        let idle = self.idle.load(Ordering::Relaxed);
        idle > 0 && self.waiting.load(Ordering::Relaxed) < idle
    }

    /// Adds donated subtrees; those after the least bug key are dropped.
    pub fn give(&self, subtrees: Vec<Subtree>) {
        if subtrees.is_empty() {
            return;
        }
        let mut s = self.lock();
        for t in subtrees {
            if s.best.as_ref().is_some_and(|b| t.key > *b) {
                s.abandoned = true;
                continue;
            }
            s.waiting.insert(t.key.clone(), t);
        }
        self.waiting.store(s.waiting.len(), Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// The next subtree to explore, waiting while other workers are busy
    /// (they may donate); `Done` once every worker waits and nothing is
    /// left. Called by a worker with no work of its own.
    pub fn take(&self) -> Taken {
        let mut s = self.lock();
        s.idle += 1;
        self.idle.store(s.idle, Ordering::Relaxed);
        let taken = loop {
            if self.stopped.load(Ordering::Relaxed) {
                break Taken::Stopped;
            }
            if let Some((_, t)) = s.waiting.pop_first() {
                if s.best.as_ref().is_some_and(|b| t.key > *b) {
                    // Every other waiting subtree comes later still.
                    s.waiting.clear();
                    s.abandoned = true;
                    continue;
                }
                break Taken::Subtree(t);
            }
            if s.done || s.idle == self.workers {
                s.done = true;
                self.wake.notify_all();
                break Taken::Done {
                    exhausted: !s.abandoned,
                };
            }
            s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
        };
        s.idle -= 1;
        self.idle.store(s.idle, Ordering::Relaxed);
        self.waiting.store(s.waiting.len(), Ordering::Relaxed);
        taken
    }

    /// Publishes the order key of a bug found (when the run stops at its
    /// first bug): work entirely after the least such key is abandoned.
    pub fn found(&self, key: Vec<u32>) {
        let mut s = self.lock();
        if s.best.as_ref().is_none_or(|b| key < *b) {
            s.best = Some(key);
            self.has_best.store(true, Ordering::Release);
        }
    }

    /// The least bug key published so far.
    pub fn best(&self) -> Option<Vec<u32>> {
        if !self.has_best.load(Ordering::Acquire) {
            return None;
        }
        self.lock().best.clone()
    }

    /// Records that a worker abandoned work after the least bug key.
    pub fn abandoned(&self) {
        self.lock().abandoned = true;
    }

    /// Ends the run for every worker (a bound was hit, or a worker failed).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _s = self.lock();
        self.wake.notify_all();
    }

    /// Whether the run was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Takes one of `max` execution tickets shared by all workers; false
    /// when they are all taken. Returns the 1-based ticket number.
    pub(crate) fn ticket(&self, max: u64) -> Option<u64> {
        self.executions
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|n| n + 1)
    }

    /// Gives back a ticket of an execution that did not count (another
    /// partition's).
    pub(crate) fn return_ticket(&self) {
        self.executions.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Stops the pool when a worker's run ends early (a bound, an error or a
/// panic), so that no other worker waits for its donations for ever.
pub(crate) struct StopOnDrop<'a> {
    pub(crate) pool: Option<&'a SubtreePool>,
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pool {
            p.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subtree(key: &[u32]) -> Subtree {
        Subtree {
            steps: Vec::new(),
            iteration: 0,
            key: key.to_vec(),
        }
    }

    #[test]
    fn subtrees_are_taken_in_search_order_and_dropped_after_a_bug() {
        let pool = SubtreePool::new(1);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0]));
        pool.give(vec![subtree(&[0, 3]), subtree(&[0, 2]), subtree(&[0, 5])]);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0, 2]));
        pool.found(vec![0, 4, 1, 0]);
        pool.give(vec![subtree(&[0, 9])]);
        assert!(matches!(pool.take(), Taken::Subtree(t) if t.key == [0, 3]));
        assert!(matches!(pool.take(), Taken::Done { exhausted: false }));
    }

    #[test]
    fn the_last_idle_worker_ends_the_run_for_all() {
        let pool = SubtreePool::new(2);
        let t = match pool.take() {
            Taken::Subtree(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(t.key, [0]);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take());
            while !pool.hungry() {
                std::thread::yield_now();
            }
            pool.give(vec![subtree(&[0, 1])]);
            assert!(matches!(waiter.join().unwrap(), Taken::Subtree(_)));
        });
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take());
            assert!(matches!(pool.take(), Taken::Done { exhausted: true }));
            assert!(matches!(waiter.join().unwrap(), Taken::Done { .. }));
        });
        let stopped = SubtreePool::new(2);
        stopped.stop();
        assert!(matches!(stopped.take(), Taken::Stopped));
    }

    #[test]
    fn tickets_stop_at_the_budget() {
        let pool = SubtreePool::new(2);
        assert_eq!(pool.ticket(2), Some(1));
        assert_eq!(pool.ticket(2), Some(2));
        assert_eq!(pool.ticket(2), None);
        pool.return_ticket();
        assert_eq!(pool.ticket(2), Some(2));
    }
}
