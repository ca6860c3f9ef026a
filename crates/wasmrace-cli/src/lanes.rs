//! `check --jobs N` for a strategy that cannot split its work (`dpor`):
//! up to N of the module's tests explored side by side, one thread each,
//! their reports printed in the module's order exactly as one thread
//! prints them.

use anyhow::Result;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use wasmrace_explore::Split;

/// How many tests run side by side: `jobs` (at most one per test) when
/// the strategy splits as `split` cannot use the threads within a test,
/// else 1 (the threads share each test's exploration instead).
pub fn count(split: Split, jobs: u32, tests: usize) -> usize {
    match split {
        Split::None => (jobs as usize).clamp(1, tests.max(1)),
        _ => 1,
    }
}

/// The threads each test's exploration takes: `jobs`, or 1 for a strategy
/// that cannot split (the others go to other tests, or stay idle).
pub fn within(split: Split, jobs: u32) -> u32 {
    match split {
        Split::None => 1,
        _ => jobs,
    }
}

/// Explores the tests of `tests` with `explore` on `lanes` threads, each
/// taking the next test not yet taken, while `body` runs on this thread
/// with the results in the order of `tests`: its iterator gives result
/// `i` as soon as test `i` is done, so that reports print as the tests
/// finish rather than all at the end. Once `body` returns, no test not yet
/// taken starts. Each test's exploration is its own (nothing is shared
/// between them), so what each reports does not depend on the others.
pub fn explore_all<T: Send, R>(
    tests: &[String],
    lanes: usize,
    explore: impl Fn(&str) -> Result<T> + Sync,
    body: impl FnOnce(&mut dyn Iterator<Item = Result<T>>) -> R,
) -> R {
    let slots = Slots {
        next: AtomicUsize::new(0),
        results: Mutex::new(tests.iter().map(|_| None).collect()),
        done: Condvar::new(),
    };
    std::thread::scope(|scope| {
        for _ in 0..lanes {
            scope.spawn(|| {
                while let Some(i) = slots.take(tests.len()) {
                    // A panic must still fill the slot: `body` waits on it.
                    let run = std::panic::AssertUnwindSafe(|| explore(&tests[i]));
                    let result = std::panic::catch_unwind(run).unwrap_or_else(|_| {
                        Err(anyhow::anyhow!(
                            "the exploration of test `{}` panicked",
                            crate::report::shown(&tests[i])
                        ))
                    });
                    slots.put(i, result);
                }
            });
        }
        let mut ordered = (0..tests.len()).map(|i| slots.wait(i));
        let out = body(&mut ordered);
        // Tests not taken yet are not run: `body` wants no more.
        slots.next.store(tests.len(), Ordering::Relaxed);
        out
    })
}

/// The tests' results as the threads finish them.
struct Slots<T> {
    /// The next test to take.
    next: AtomicUsize,
    results: Mutex<Vec<Option<Result<T>>>>,
    /// Signalled whenever a result is put.
    done: Condvar,
}

impl<T> Slots<T> {
    /// The next test to explore, if any is left.
    fn take(&self, tests: usize) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < tests).then_some(i)
    }

    fn put(&self, i: usize, result: Result<T>) {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        results[i] = Some(result);
        self.done.notify_all();
    }

    /// Waits for test `i`'s result and takes it.
    fn wait(&self, i: usize) -> Result<T> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(result) = results[i].take() {
                return result;
            }
            results = self.done.wait(results).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_are_the_threads_a_strategy_cannot_use_within_a_test() {
        assert_eq!(count(Split::None, 2, 10), 2);
        assert_eq!(count(Split::None, 8, 3), 3);
        assert_eq!(count(Split::None, 1, 3), 1);
        assert_eq!(count(Split::ByPrefix, 4, 10), 1);
        assert_eq!((within(Split::None, 4), within(Split::ByPrefix, 4)), (1, 4));
    }

    #[test]
    fn results_come_in_the_order_of_the_tests_whoever_ran_them() {
        let tests: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        let explore = |t: &str| {
            // Later tests finish first.
            let n: u64 = t[1..].parse().unwrap();
            std::thread::sleep(std::time::Duration::from_micros(400 - 10 * n));
            if n == 7 {
                anyhow::bail!("t7 failed")
            }
            Ok(n)
        };
        let seen = explore_all(&tests, 3, explore, |results| {
            let mut seen = 0;
            for (i, r) in results.enumerate() {
                match r {
                    Ok(n) => assert_eq!(n, i as u64),
                    Err(e) => assert_eq!((i, e.to_string().as_str()), (7, "t7 failed")),
                }
                seen += 1;
            }
            seen
        });
        assert_eq!(seen, 40);
    }

    #[test]
    fn a_panicking_exploration_is_an_error_not_a_hang() {
        let tests: Vec<String> = (0..4).map(|i| format!("t{i}")).collect();
        let explore = |t: &str| -> Result<()> {
            if t == "t1" {
                panic!("boom");
            }
            Ok(())
        };
        let errors: Vec<String> = explore_all(&tests, 2, explore, |results| {
            results
                .filter_map(|r| r.err().map(|e| e.to_string()))
                .collect()
        });
        assert_eq!(errors, ["the exploration of test `t1` panicked"]);
    }

    #[test]
    fn tests_not_taken_when_the_caller_stops_do_not_run() {
        let tests: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        let ran = AtomicUsize::new(0);
        let explore = |_: &str| {
            ran.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(())
        };
        // The caller stops at the first result, as `check` does on an error.
        explore_all(&tests, 2, explore, |results| results.next().map(|_| ()));
        assert!(ran.load(Ordering::Relaxed) < 40);
    }
}
