//! Random walk: every execution starts fresh and, at each step, picks an
//! enabled thread uniformly at random, then one of its alternatives
//! uniformly. Choosing the thread first keeps a `choose(100)` from making its
//! thread a hundred times likelier to run than the others.
//!
//! Execution `i` draws from ChaCha8 stream `i` of the seed, so it depends
//! only on `(seed, i)`: the same seed gives the same schedules whatever the
//! snapshot policy or the length of earlier executions.

use crate::explorer::Split;
use crate::strategies::descriptor::{Descriptor, StrategyOptions};
use crate::strategy::{Context, Profile, Standing, Start, Strategy};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wasmrace_trace::Decision;

/// `random` in the [registry](crate::strategies::registry).
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "random",
    about: "Random walks among the enabled threads, reproducible by --seed",
    takes: &[],
    always: &[],
    defaults: StrategyOptions::NONE,
    refuses: &[],
    build: |_, seed| Box::new(RandomWalk::new(seed)),
    describe: |_, seed| format!("random, seed {seed}"),
    options_json: |_| serde_json::Map::new(),
};

/// Random walk; see the module documentation.
#[derive(Clone, Debug)]
pub struct RandomWalk {
    seed: u64,
    rng: ChaCha8Rng,
}

impl RandomWalk {
    /// The walk; execution `i` draws from ChaCha8 stream `i` of `seed`.
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

    /// Execution `i` depends only on the seed and `i`: by execution.
    fn profile(&self) -> Profile {
        Profile {
            split: Split::ByExecution,
            ..Profile::default()
        }
    }

    fn standing(&self) -> Standing<'_> {
        Standing {
            seed: self.seed,
            ..Standing::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Pending, ThreadView};
    use wasmrace_trace::{OpKind, Tid};

    fn view(tid: u64, enabled: bool, alts: u32) -> ThreadView {
        ThreadView {
            tid: Tid(tid),
            pending: Pending {
                op: OpKind::Choose,
                enabled,
                alts,
                accesses: vec![],
                site: 0,
            },
        }
    }

    fn draw(r: &mut RandomWalk, ts: &[ThreadView], n: usize) -> Vec<Decision> {
        (0..n)
            .map(|step| {
                r.decide(&Context {
                    step,
                    threads: ts,
                    hidden: 0,
                    last: None,
                    prefix: &[],
                })
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn picks_the_thread_first_then_the_alternative() {
        let ts = [view(1, true, 100), view(2, true, 1), view(3, false, 1)];
        let mut r = RandomWalk::new(42);
        r.begin(0);
        let ds = draw(&mut r, &ts, 4000);
        assert!(
            ds.iter().all(|d| d.tid != Tid(3)),
            "never a disabled thread"
        );
        assert!(ds.iter().all(|d| d.tid == Tid(1) || d.alt == 0));
        let twos = ds.iter().filter(|d| d.tid == Tid(2)).count();
        // Uniform over threads: about half, not 1/101.
        assert!((1800..2200).contains(&twos), "{twos}");
        let alts: std::collections::BTreeSet<u32> = ds
            .iter()
            .filter(|d| d.tid == Tid(1))
            .map(|d| d.alt)
            .collect();
        assert!(alts.len() > 90, "alternatives spread over 0..100");
    }

    #[test]
    fn an_execution_depends_only_on_seed_and_index() {
        let ts = [view(1, true, 3), view(2, true, 1), view(3, true, 2)];
        let mut a = RandomWalk::new(9);
        a.begin(5);
        let direct = draw(&mut a, &ts, 20);
        let mut b = RandomWalk::new(9);
        b.begin(0);
        draw(&mut b, &ts, 77);
        b.begin(5);
        assert_eq!(draw(&mut b, &ts, 20), direct);
        b.begin(6);
        assert_ne!(draw(&mut b, &ts, 20), direct);
        let mut c = RandomWalk::new(10);
        c.begin(5);
        assert_ne!(draw(&mut c, &ts, 20), direct);
        assert_eq!(
            (a.standing().seed, a.name(), a.standing().exhausted),
            (9, "random", false)
        );
    }
}
