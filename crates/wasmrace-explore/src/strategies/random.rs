//! Random walk: every execution starts fresh and, at each step, picks an
//! enabled thread uniformly at random, then one of its alternatives
//! uniformly. Choosing the thread first keeps a `choose(100)` from making its
//! thread a hundred times likelier to run than the others.
//!
//! Execution `i` draws from ChaCha8 stream `i` of the seed, so it depends
//! only on `(seed, i)`: the same seed gives the same schedules whatever the
//! snapshot policy or the length of earlier executions.

use crate::strategy::{Context, Start, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wasmrace_trace::Decision;

#[derive(Clone, Debug)]
pub struct RandomWalk {
    seed: u64,
    rng: ChaCha8Rng,
}

impl RandomWalk {
    pub fn new(seed: u64) -> Self {
        RandomWalk {
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Strategy for RandomWalk {
    fn name(&self) -> &str {
        "random"
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn begin(&mut self, executions: u64) -> Option<Start> {
        self.rng = ChaCha8Rng::seed_from_u64(self.seed);
        self.rng.set_stream(executions);
        Some(Start::Fresh)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let enabled = ctx.threads.iter().filter(|t| t.pending.enabled).count();
        if enabled == 0 {
            return None;
        }
        let pick = self.rng.random_range(0..enabled);
        let t = ctx.threads.iter().filter(|t| t.pending.enabled).nth(pick)?;
        let alt = if t.pending.alts > 1 {
            self.rng.random_range(0..t.pending.alts)
        } else {
            0
        };
        Some(Decision::new(t.tid, alt))
    }
}
