//! An ordinary library with an ordinary test: nothing here knows wasmrace.
//! `Counter::increment` reads, then writes: two threads can both read 0
//! and both write 1, so an increment is lost in some interleavings, which
//! `cargo test` almost never shows and `wasmrace test` always finds.

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter shared between threads.
#[derive(Default)]
pub struct Counter {
    value: AtomicU64,
}

impl Counter {
    /// Adds one. Not atomic: the load and the store are two operations
    /// (`fetch_add` would be one).
    pub fn increment(&self) {
        let v = self.value.load(Ordering::SeqCst);
        self.value.store(v + 1, Ordering::SeqCst);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn two_threads_count_to_two() {
        let counter = Arc::new(Counter::default());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let counter = Arc::clone(&counter);
                thread::spawn(move || counter.increment())
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counter.get(), 2, "an increment was lost");
    }
}
