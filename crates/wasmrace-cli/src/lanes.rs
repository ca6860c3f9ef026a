//! `check --jobs N` for a strategy that cannot split its work (`dpor`):
//! up to N of the module's tests explored side by side, one thread each,
//! their reports printed in the module's order exactly as one thread
//! prints them.

use anyhow::Result;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
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

/// Explores every test of `tests` with `explore` on `lanes` threads, each
/// taking the next test not yet taken; the results in the order of
/// `tests`. Each test's exploration is its own (nothing is shared between
/// them), so what each reports does not depend on the others.
pub fn explore_all<T: Send>(
    tests: &[String],
    lanes: usize,
    explore: impl Fn(&str) -> Result<T> + Sync,
) -> std::vec::IntoIter<Result<T>> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<T>>>> = tests.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..lanes {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(test) = tests.get(i) else {
                    break;
                };
                let result = explore(test);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            let r = r.into_inner().unwrap_or_else(|e| e.into_inner());
            r.unwrap_or_else(|| Err(anyhow::anyhow!("a test's exploration did not run")))
        })
        .collect::<Vec<_>>()
        .into_iter()
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
        let results = explore_all(&tests, 3, |t| {
            // Later tests finish first.
            let n: u64 = t[1..].parse().unwrap();
            std::thread::sleep(std::time::Duration::from_micros(400 - 10 * n));
            if n == 7 {
                anyhow::bail!("t7 failed")
            }
            Ok(n)
        });
        for (i, r) in results.enumerate() {
            match r {
                Ok(n) => assert_eq!(n, i as u64),
                Err(e) => assert_eq!((i, e.to_string().as_str()), (7, "t7 failed")),
            }
        }
    }
}
