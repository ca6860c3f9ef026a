//! The peers' algorithms for loom and shuttle, written once (a macro
//! instantiates them against each crate's `thread`, `Mutex` and `AtomicU64`)
//! so the two native versions cannot drift apart, and the drivers that run
//! them: loom's exhaustive model checker, shuttle's random and DFS
//! schedulers. guest/src/lib.rs is the same code for wasmrace; keep the
//! operations and their order identical.
//!
//! Shared objects are reached through `std::sync::Arc`, not loom's `Arc`:
//! loom models its `Arc`'s reference count as atomic operations, each a
//! scheduling point, and the guest's handles are plain ids with no
//! operations at all.

use crate::Test;
use shuttle::scheduler::{DfsScheduler, RandomScheduler};
use shuttle::{FailurePersistence, Runner};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64 as StdAtomicU64, Ordering::Relaxed};
use std::sync::Arc;

macro_rules! algorithms {
    ($module:ident, $krate:ident) => {
        pub mod $module {
            use crate::Test;
            use ::$krate::sync::atomic::{AtomicU64, Ordering::SeqCst};
            use ::$krate::sync::Mutex;
            use ::$krate::thread;
            use std::sync::Arc;

            pub fn run(test: Test) {
                match test {
                    Test::LostUpdate(n) => lost_update(n),
                    Test::FetchAdd(n) => fetch_add(n),
                    Test::MutexCounter(n) => mutex_counter(n),
                    Test::Transfer { ordered } => two_lock_transfer(ordered),
                }
            }

            fn lost_update(threads: u64) {
                let x = Arc::new(AtomicU64::new(0));
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let x = x.clone();
                        thread::spawn(move || {
                            let v = x.load(SeqCst);
                            x.store(v + 1, SeqCst);
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
                assert_eq!(x.load(SeqCst), threads, "an increment was lost");
            }

            fn fetch_add(threads: u64) {
                let x = Arc::new(AtomicU64::new(0));
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let x = x.clone();
                        thread::spawn(move || {
                            x.fetch_add(1, SeqCst);
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
                assert_eq!(x.load(SeqCst), threads, "an increment was lost");
            }

            fn mutex_counter(threads: u64) {
                let shared = Arc::new((AtomicU64::new(0), Mutex::new(())));
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let shared = shared.clone();
                        thread::spawn(move || {
                            let (x, m) = &*shared;
                            let _guard = m.lock().unwrap();
                            let v = x.load(SeqCst);
                            x.store(v + 1, SeqCst);
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
                assert_eq!(
                    shared.0.load(SeqCst),
                    threads,
                    "an increment was lost despite the lock"
                );
            }

            struct Account {
                balance: AtomicU64,
                lock: Mutex<()>,
            }

            fn transfer(from: &Account, to: &Account, amount: u64, ordered: bool, first: &Account) {
                let (l1, l2) = if ordered && std::ptr::eq(to, first) {
                    (&to.lock, &from.lock)
                } else {
                    (&from.lock, &to.lock)
                };
                let _g1 = l1.lock().unwrap();
                let _g2 = l2.lock().unwrap();
                from.balance
                    .store(from.balance.load(SeqCst) - amount, SeqCst);
                to.balance.store(to.balance.load(SeqCst) + amount, SeqCst);
            }

            fn two_lock_transfer(ordered: bool) {
                let a = Arc::new(Account {
                    balance: AtomicU64::new(100),
                    lock: Mutex::new(()),
                });
                let b = Arc::new(Account {
                    balance: AtomicU64::new(100),
                    lock: Mutex::new(()),
                });
                let t1 = {
                    let (a, b) = (a.clone(), b.clone());
                    thread::spawn(move || transfer(&a, &b, 10, ordered, &a))
                };
                let t2 = {
                    let (a, b) = (a.clone(), b.clone());
                    thread::spawn(move || transfer(&b, &a, 20, ordered, &a))
                };
                t1.join().unwrap();
                t2.join().unwrap();
                assert_eq!(a.balance.load(SeqCst), 110, "account a");
                assert_eq!(b.balance.load(SeqCst), 90, "account b");
            }
        }
    };
}

algorithms!(on_loom, loom);
algorithms!(on_shuttle, shuttle);

/// How a run of a native checker ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Executions started (the model closure's calls).
    pub executions: u64,
    /// Whether the last one failed (the checker panicked out).
    pub bug: bool,
}

/// Counts calls of the model closure; the count is exact because every
/// execution calls the closure once.
fn counted(test: Test, run: fn(Test)) -> (Arc<StdAtomicU64>, impl Fn() + Send + Sync + 'static) {
    let count = Arc::new(StdAtomicU64::new(0));
    let c = count.clone();
    (count, move || {
        c.fetch_add(1, Relaxed);
        run(test)
    })
}

/// loom's model checker with no preemption bound, no permutation or time
/// limit, and no checkpoint file, whatever the `LOOM_*` environment says:
/// exhaustive (up to loom's DPOR, which skips interleavings equivalent to
/// ones it explored). `max_branches` (1,000) and `max_threads` (5) stay at
/// their defaults; these tests stay far below both.
pub fn loom_exhaustive(test: Test) -> Run {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = None;
    builder.max_permutations = None;
    builder.max_duration = None;
    builder.checkpoint_file = None;
    builder.location = false;
    builder.log = false;
    let (count, f) = counted(test, on_loom::run);
    let bug = catch_unwind(AssertUnwindSafe(|| builder.check(f))).is_err();
    Run {
        executions: count.load(Relaxed),
        bug,
    }
}

fn shuttle_config() -> shuttle::Config {
    let mut config = shuttle::Config::new();
    // A found bug is expected here: do not print its schedule.
    config.failure_persistence = FailurePersistence::None;
    config
}

/// shuttle's `RandomScheduler` (what `check_random` runs) from `seed`, at
/// most `iterations` executions, stopping at the first failure.
pub fn shuttle_random(test: Test, seed: u64, iterations: u64) -> Run {
    let scheduler = RandomScheduler::new_from_seed(seed, iterations as usize);
    let runner = Runner::new(scheduler, shuttle_config());
    let (count, f) = counted(test, on_shuttle::run);
    let bug = catch_unwind(AssertUnwindSafe(|| runner.run(f))).is_err();
    Run {
        executions: count.load(Relaxed),
        bug,
    }
}

/// shuttle's `DfsScheduler` (what `check_dfs` runs): every interleaving of
/// scheduling points, no reduction, like wasmrace's unbounded DFS.
pub fn shuttle_dfs(test: Test) -> Run {
    let runner = Runner::new(DfsScheduler::new(None, false), shuttle_config());
    let (count, f) = counted(test, on_shuttle::run);
    let bug = catch_unwind(AssertUnwindSafe(|| runner.run(f))).is_err();
    Run {
        executions: count.load(Relaxed),
        bug,
    }
}
