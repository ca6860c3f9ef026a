//! State caches under fair scheduling: a state reached with a spinning
//! thread held back by fairness and the same state reached with it free
//! have different subtrees, so a cache must tell them apart
//! (`Fairness::key`); keyed by the program state alone, it pruned the
//! second and missed the bug only the spinner's next step shows.

use super::{reg, Model, ModelBuilder};
use crate::strategies::{Dfs, RoundRobin, Ses, SesOptions};
use crate::{Config, DfsOptions, Explorer, Report, Strategy};

/// `a` yields three times, then reads a flag that `b` sets after a read
/// of its own; the bug is `a` reading the flag unset. After `b`'s read
/// and `a`'s three yields, the state is the same whichever came first,
/// but `a` gives way to `b` there (its third yield may have starved `b`)
/// only when `b` read first: that path must not stand for the other.
fn spinner_and_setter(a_first: bool) -> Model {
    let mut b = ModelBuilder::new();
    let (flag, x) = (b.var("flag", 0), b.var("x", 0));
    let a = b.thread("a", |t| {
        t.yield_now()
            .yield_now()
            .yield_now()
            .read(flag, 0)
            .assert(reg(0).not_equals(0), "a read the flag unset");
    });
    let setter = b.thread("b", |t| {
        t.read(x, 0).write(flag, 1);
    });
    b.main(|t| {
        match a_first {
            true => t.spawn(a, 0).spawn(setter, 1),
            false => t.spawn(setter, 1).spawn(a, 0),
        };
        t.join(reg(0)).join(reg(1));
    });
    b.build().unwrap()
}

fn run(model: Model, fairness_bound: Option<u32>, strategy: &mut dyn Strategy) -> Report {
    let config = Config {
        stop_on_first_bug: false,
        fairness_bound,
        ..Config::default()
    };
    Explorer::new(model, config).run(strategy).unwrap()
}

fn plain_dfs() -> Dfs {
    Dfs::new(DfsOptions {
        preemption_bound: None,
    })
}

/// Every fairness bound (and none), both spawn orders: DFS with a state
/// cache, and SES, find the bug exactly when DFS without a cache does.
#[test]
fn a_state_cache_keeps_states_fairness_holds_back_apart_from_free_ones() {
    for a_first in [true, false] {
        for fairness in [None, Some(0), Some(1), Some(2), Some(3), Some(5)] {
            let model = || spinner_and_setter(a_first);
            let plain = run(model(), fairness, &mut plain_dfs());
            let cached = run(model(), fairness, &mut plain_dfs().with_state_cache(64));
            let ses_opts = SesOptions {
                delay_bound: None,
                cache_mb: 64,
            };
            let ses = run(
                model(),
                fairness,
                &mut Ses::new(RoundRobin::new(), 0, ses_opts),
            );
            let at = format!("a first {a_first}, fairness bound {fairness:?}");
            assert!(plain.exhausted && cached.exhausted && ses.exhausted, "{at}");
            let found = plain.failing_executions > 0;
            assert_eq!(
                cached.failing_executions > 0,
                found,
                "dfs --state-cache, {at}"
            );
            assert_eq!(ses.failing_executions > 0, found, "ses, {at}");
            // The cache still prunes.
            assert!(cached.executions < plain.executions, "{at}");
        }
    }
    // With the default bound the bug is there to find.
    let plain = run(spinner_and_setter(true), Some(2), &mut plain_dfs());
    assert!(plain.failing_executions > 0);
}
