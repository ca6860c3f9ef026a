//! Lost update: N threads each increment a shared counter with a read and a
//! separate write, `x.set(x.get() + 1)`, and `main` checks the total.
//!
//! Expected: BUG, `assert_eq!` panics in `main` when two threads read the
//! same value before either writes it back: one increment is lost. Tests
//! `lost_update` (2 threads) and `lost_update_3` (3 threads).
//!
//! This is also the quick-start example, examples/lost-update: keep the two
//! copies identical (a fixture test compares them).

use wasmrace::shared::Cell;
use wasmrace::thread;

#[wasmrace::test]
fn lost_update() {
    increment_concurrently(2);
}

#[wasmrace::test]
fn lost_update_3() {
    increment_concurrently(3);
}

fn increment_concurrently(threads: u64) {
    let x = Cell::new(0);
    let workers: Vec<_> = (0..threads)
        .map(|_| thread::spawn(move || x.set(x.get() + 1)))
        .collect();
    for w in workers {
        w.join();
    }
    let total = x.get();
    wasmrace::log(&format!("total = {total}"));
    assert_eq!(total, threads, "an increment was lost");
}
