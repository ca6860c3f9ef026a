//! The built-in strategies by name: [`REGISTRY`], one line per strategy,
//! each the [`Descriptor`] declared in the strategy's own file. The CLI
//! (`--strategy`, its help and its option checks), `check`, `bench` and
//! the reports all read the strategies from here, so that they cannot
//! drift apart.
//!
//! To add a strategy: write it in its family's folder with a `pub const
//! DESCRIPTOR: Descriptor` (name, help line, the [`Knob`]s it takes and
//! their defaults, what it refuses, `build`, `describe`, `options_json`;
//! see [`descriptor`](super::descriptor)), add the file to the family's
//! `mod.rs`, and add one line to [`REGISTRY`]. A strategy whose option no
//! knob covers also needs a [`Knob`], a field of [`StrategyOptions`] and a
//! flag in the CLI's `check` command.

use super::descriptor::Descriptor;
#[cfg(doc)]
use super::descriptor::{Knob, StrategyOptions};
use super::{directed, portfolio, sampling, systematic};

/// The built-in strategies, in the order `--help` lists them; the first is
/// the default (the portfolio). A new strategy is one line here, by its
/// family's path, so that nothing else needs to name it.
pub const REGISTRY: &[&Descriptor] = &[
    &portfolio::DESCRIPTOR,
    &systematic::dfs::DESCRIPTOR,
    &sampling::random::DESCRIPTOR,
    &sampling::pct::DESCRIPTOR,
    &sampling::basic_pos::DESCRIPTOR,
    &sampling::pos::DESCRIPTOR,
    &sampling::pos_star::DESCRIPTOR,
    &directed::racefuzzer::DESCRIPTOR,
    &directed::procrastination::DESCRIPTOR,
    &systematic::ses::DESCRIPTOR,
    &systematic::dpor::DESCRIPTOR,
    &sampling::ss::DESCRIPTOR,
];

/// The names of [`REGISTRY`], in its order.
pub const NAMES: &[&str] = &names::<{ REGISTRY.len() }>();

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = REGISTRY[i].name;
        i += 1;
    }
    out
}

/// The strategy called `name`, if one is registered.
pub fn find(name: &str) -> Option<&'static Descriptor> {
    REGISTRY.iter().copied().find(|d| d.name == name)
}

/// The default strategy: what `wasmrace check` runs when none is named.
pub fn default_descriptor() -> &'static Descriptor {
    REGISTRY[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{reg, Model, ModelBuilder};
    use crate::strategies::descriptor::StrategyOptions;
    use crate::{Config, Explorer};

    /// Two threads incrementing a variable without a lock, then main
    /// checking the total: a lost update some strategies find.
    fn lost_update() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let inc = b.thread("inc", |t| {
            t.read(x, 0).set(0, reg(0) + 1).write(x, reg(0));
        });
        b.main(|t| {
            t.spawn(inc, 0)
                .spawn(inc, 1)
                .join(reg(0))
                .join(reg(1))
                .read(x, 2)
                .assert(reg(2).equals(2), "lost update");
        });
        b.build().unwrap()
    }

    #[test]
    fn names_are_unique_and_the_portfolio_comes_first() {
        let mut names = NAMES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        assert_eq!(default_descriptor().name, "portfolio");
        assert_eq!(find("pos-star").map(|d| d.name), Some("pos-star"));
        assert!(find("bogus").is_none());
    }

    #[test]
    fn every_strategy_builds_under_its_name_and_explores() {
        let model = lost_update();
        for d in REGISTRY {
            let options = d.resolve(&StrategyOptions::NONE);
            let mut strategy = (d.build)(&options, 7);
            assert_eq!(strategy.name(), d.name);
            let config = Config {
                max_executions: 5,
                ..Config::default()
            };
            let report = Explorer::new(model.clone(), config)
                .run(&mut strategy)
                .expect(d.name);
            assert!(report.executions >= 1, "{}: {report:?}", d.name);
            assert!((d.describe)(&options, 7).starts_with(d.name));
        }
    }

    /// `dpor` declares the one combination of its options it refuses
    /// (`--dpor optimal` with a bound); no other strategy refuses any.
    #[test]
    fn only_dpor_declares_refusals() {
        use crate::strategies::descriptor::Knob;
        use crate::strategies::DporMode;
        let optimal = StrategyOptions {
            preemption_bound: Some(Some(2)),
            dpor: Some(DporMode::Optimal),
            ..StrategyOptions::NONE
        };
        for d in REGISTRY {
            let refused = d.refusal(Knob::Dpor, &optimal).is_some();
            assert_eq!(refused, d.name == "dpor", "{}", d.name);
            assert_eq!(d.refuses.is_empty(), d.name != "dpor", "{}", d.name);
        }
    }

    #[test]
    fn only_taken_knobs_survive_resolution() {
        let given = StrategyOptions {
            depth: Some(5),
            cache_mb: Some(8),
            ..StrategyOptions::NONE
        };
        let dfs = find("dfs").unwrap();
        assert_eq!(dfs.resolve(&given).depth, None);
        assert_eq!(dfs.resolve(&given).cache_mb, None, "no state cache");
        let cached = StrategyOptions {
            state_cache: Some(true),
            ..given
        };
        assert_eq!(dfs.resolve(&cached).cache_mb, Some(8));
        assert_eq!(find("pct").unwrap().resolve(&given).depth, Some(5));
        assert_eq!(
            find("random").unwrap().resolve(&given),
            StrategyOptions::NONE
        );
    }
}
