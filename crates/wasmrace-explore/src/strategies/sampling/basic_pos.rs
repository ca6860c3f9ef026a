//! BasicPOS (Yuan, Yang & Gu, "Partial Order Aware Concurrency Sampling",
//! CAV 2018, §4.1, Algorithm 2): every event gets a random priority that
//! never changes, and the enabled event with the highest priority runs.
//!
//! It is [`Pos`](crate::strategies::Pos) without the priority reassignment, kept as the
//! paper's baseline: an event that has to wait for many others needs a
//! priority below all of theirs, so constraints propagate and a partial
//! order can be sampled with probability as low as `1/|V|!` (§4.1). Events,
//! on-demand priorities, `choose` values and seeding are as for `Pos`; see
//! its module documentation.
//!
//! On the paper's running example (Fig. 2) BasicPOS needs `B1 > A1 > B2 >
//! A2`, `B3 > A2` (4 of the 5! orders of those events) and A4 below B4, B5
//! and B6 (1/4): probability 1/30 * 1/4 = 1/120, which the tests check.

use super::pos::{pos_strategy, PosEngine, Variant};
use crate::program::StepInfo;
use crate::strategies::descriptor::{Descriptor, StrategyOptions};
use crate::strategy::{Context, Start, Strategy};
use wasmrace_trace::Decision;

/// `basic-pos` in the [registry](crate::strategies::registry).
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "basic-pos",
    about: "Partial-order sampling with fixed random priorities (CAV 2018)",
    takes: &[],
    always: &[],
    defaults: StrategyOptions::NONE,
    refuses: &[],
    build: |_, seed| Box::new(BasicPos::new(seed)),
    describe: |_, seed| format!("basic-pos, seed {seed}"),
    options_json: |_| serde_json::Map::new(),
};

pos_strategy!(
    /// BasicPOS (Algorithm 2); see the module documentation.
    BasicPos,
    "basic-pos",
    Variant::Basic
);

#[cfg(test)]
mod tests {
    use super::super::pos::testing::*;
    use super::*;

    #[test]
    fn basic_pos_hits_the_running_example_with_probability_1_120() {
        // mean 167 hits of 20,000, sigma 12.9.
        hits_with_probability(&mut BasicPos::new(1), 20_000, 1.0 / 120.0);
    }

    #[test]
    fn basic_pos_replays_and_is_deterministic() {
        found_bug_replays(&mut BasicPos::new(3));
        deterministic(BasicPos::new);
    }
}
