//! Livelocks a state cache closes: an execution cut at a state of its own
//! path, round a cycle every enabled thread takes part in, livelocks, and
//! its path includes the steps before the saved state SES started it from
//! (`explorer/saved.rs` keeps their hashes with the prefix). Without them
//! SES went round the cycle of a polite-backoff livelock only from saved
//! states below its start, found the start cached each time, and reported
//! the space exhausted with no bug.

use super::{reg, Model, ModelBuilder, ThreadBuilder};
use crate::state_cache::StateCache;
use crate::strategies::{ExplorerKind, Ses, SesOptions};
use crate::{Config, Dfs, DfsOptions, Explorer, Report, Strategy};
use wasmrace_trace::FailureKind;

/// Two threads that each raise their own flag, back off (lower it and
/// yield) while the other's is raised, and pass once it is not: in
/// lockstep they back off for ever, a livelock every fair scheduler can
/// keep up; any other schedule lets one through.
pub(super) fn polite() -> Model {
    let mut b = ModelBuilder::new();
    let (a, c, z) = (b.var("a", 0), b.var("c", 0), b.var("z", 0));
    let backoff = |mine, theirs| {
        move |t: &mut ThreadBuilder| {
            t.label("top")
                .write(mine, 1)
                .read(theirs, 0)
                .when(reg(0).equals(1), |t| {
                    t.write(mine, 0).yield_now();
                })
                .jump_if(reg(0).equals(1), "top")
                .fetch_add(z, 1, 1)
                .write(mine, 0);
        }
    };
    let left = b.thread("left", backoff(a, c));
    let right = b.thread("right", backoff(c, a));
    b.main(|t| {
        t.spawn(left, 0).spawn(right, 1).join(reg(0)).join(reg(1));
    });
    b.build().unwrap()
}

fn run(strategy: &mut dyn Strategy) -> Report {
    let config = Config {
        max_executions: 200_000,
        max_steps: 2_000,
        ..Config::default()
    };
    Explorer::new(polite(), config).run(strategy).unwrap()
}

fn assert_livelock(name: &str, r: &Report) {
    let bug = r.bugs.first();
    assert!(
        bug.is_some_and(|b| b.failure.kind == FailureKind::Livelock),
        "{name}: {} executions, exhausted {}, bugs {:?}",
        r.executions,
        r.exhausted,
        r.bugs
            .iter()
            .map(|b| &b.failure.message)
            .collect::<Vec<_>>()
    );
    let message = &bug.unwrap().failure.message;
    assert!(
        message.contains("lead back to the state after step"),
        "{name}: {message}"
    );
}

#[test]
fn ses_sees_a_cycle_back_above_the_saved_state_it_started_from() {
    // DFS with a cache walks every path from the initial state, so the
    // cycle closes on a path it knows whole.
    let mut dfs = Dfs::new(DfsOptions {
        preemption_bound: None,
    })
    .with_state_cache(64);
    assert_livelock("dfs", &run(&mut dfs));
    for explorer in [
        ExplorerKind::RunToCompletion,
        ExplorerKind::RoundRobin,
        ExplorerKind::ProbabilisticRoundRobin,
    ] {
        let options = SesOptions {
            delay_bound: None,
            cache_mb: 1,
        };
        let mut ses =
            Ses::new(explorer.build(7), 7, options).with_cache(StateCache::with_slots(1 << 14));
        let r = run(&mut ses);
        assert_livelock(&format!("ses, {explorer:?}"), &r);
        // Past round 0 every execution starts from a saved state.
        assert!(
            r.saved_with_snapshot + r.saved_as_prefix > 0,
            "{explorer:?}"
        );
    }
}
