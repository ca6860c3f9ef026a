//! The probabilistic round-robin delaying explorer, PRR (Desai, Qadeer &
//! Seshia, FSE 2015, §5.3): round robin, except that "instead of inserting a
//! freshly created process at the tail of the queue, insert it at a random
//! position in the queue; everything else carries over from the round robin
//! explorer". `next` and `delay` are RR's, so PRR is sound; the random
//! insertions change the default order, which the paper found to be RR's
//! weakness.
//!
//! The random choices are part of the explorer's state: a clone continues
//! the same sequence, so SES's stored explorer states and SS's re-executions
//! of a sampled path see the same insertions. `reseed` restarts the sequence
//! (ChaCha8 seeded with the given seed); SS reseeds before every sample, so
//! each sample draws its own order.

use super::explorer::DelayingExplorer;
use super::rr::RoundRobin;
use crate::program::{StepInfo, ThreadView};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wasmrace_trace::Tid;

/// PRR: round robin with new threads inserted at a random place of the
/// queue (see the module documentation).
#[derive(Clone, Debug)]
pub struct ProbabilisticRoundRobin {
    rr: RoundRobin,
    rng: ChaCha8Rng,
}

impl ProbabilisticRoundRobin {
    /// An empty queue whose insertions draw from ChaCha8 seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        ProbabilisticRoundRobin {
            rr: RoundRobin::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The queue, head first.
    pub fn queue(&self) -> impl Iterator<Item = Tid> + '_ {
        self.rr.queue()
    }
}

impl DelayingExplorer for ProbabilisticRoundRobin {
    fn name(&self) -> &str {
        "prr"
    }

    fn reseed(&mut self, seed: u64) {
        self.rng = ChaCha8Rng::seed_from_u64(seed);
    }

    fn is_random(&self) -> bool {
        true
    }

    /// A uniformly random position among the `len + 1` places of the queue.
    fn start(&mut self, thread: Tid) {
        let pos = self.rng.random_range(0..=self.rr.len());
        self.rr.insert_at(pos, thread);
    }

    fn finish(&mut self, thread: Tid) {
        self.rr.finish(thread)
    }

    fn step(&mut self, event: &StepInfo, threads: &[ThreadView]) {
        self.rr.step(event, threads)
    }

    fn next(&self, threads: &[ThreadView]) -> Tid {
        self.rr.next(threads)
    }

    fn delay(&mut self, threads: &[ThreadView]) {
        self.rr.delay(threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::delaying::{is_sound_at, views, DelayCursor};
    use std::collections::BTreeSet;

    fn order_after_starting(seed: u64, n: u64) -> Vec<u64> {
        let mut e = ProbabilisticRoundRobin::new(seed);
        for t in 1..=n {
            e.start(Tid(t));
        }
        e.queue().map(|t| t.0).collect()
    }

    #[test]
    fn new_threads_land_at_random_places_reproducibly() {
        assert_eq!(order_after_starting(1, 6), order_after_starting(1, 6));
        let orders: BTreeSet<Vec<u64>> = (0..40).map(|s| order_after_starting(s, 4)).collect();
        // 24 orders are possible; 40 seeds must give several, and not only
        // creation order.
        assert!(orders.len() >= 6, "{orders:?}");
        for o in &orders {
            let mut sorted = o.clone();
            sorted.sort();
            assert_eq!(sorted, vec![1, 2, 3, 4], "a permutation");
        }
        // Reseeding restarts the sequence.
        let mut a = ProbabilisticRoundRobin::new(9);
        a.start(Tid(1));
        a.reseed(3);
        a.finish(Tid(1));
        for t in 1..=5 {
            a.start(Tid(t));
        }
        let q: Vec<u64> = a.queue().map(|t| t.0).collect();
        assert_eq!(q, order_after_starting(3, 5));
        // A clone continues the same draws.
        let mut b = ProbabilisticRoundRobin::new(5);
        b.start(Tid(1));
        let mut c = b.clone();
        for t in 2..6 {
            b.start(Tid(t));
            c.start(Tid(t));
        }
        assert!(b.queue().eq(c.queue()));
    }

    #[test]
    fn prr_is_sound() {
        for seed in 0..10 {
            let ts = views(&[(1, true, 1), (2, true, 1), (3, false, 1), (4, true, 2)]);
            let c = DelayCursor::new(ProbabilisticRoundRobin::new(seed), &ts);
            assert!(is_sound_at(&c, &ts));
        }
    }
}
