//! What `check` is asked to run: the strategy (a registered one with its
//! options resolved, [`StrategyChoice`]), its seed and the explorer's
//! bounds ([`CheckOptions`]). Every way of running a check, on one thread
//! or several, reads these and nothing else.

use wasmrace_explore::strategies::descriptor::{Descriptor, StrategyOptions};
use wasmrace_explore::strategies::registry;
use wasmrace_explore::{Config, Strategy};

/// Which strategy `check` runs: a registered strategy
/// ([`registry`](wasmrace_explore::strategies::registry)) with its options,
/// resolved (the defaults filled in, options it does not take dropped), so
/// that two choices that run alike compare equal.
#[derive(Clone)]
pub struct StrategyChoice {
    descriptor: &'static Descriptor,
    options: StrategyOptions,
}

impl PartialEq for StrategyChoice {
    fn eq(&self, other: &Self) -> bool {
        self.descriptor.name == other.descriptor.name && self.options == other.options
    }
}

impl Eq for StrategyChoice {}

impl std::fmt::Debug for StrategyChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyChoice")
            .field("name", &self.descriptor.name)
            .field("options", &self.options)
            .finish()
    }
}

/// The strategy names the CLI accepts, in the order `--help` lists them.
pub const STRATEGY_NAMES: &[&str] = registry::NAMES;

impl StrategyChoice {
    /// `descriptor`'s strategy with `given` where set and its defaults
    /// elsewhere.
    pub fn new(descriptor: &'static Descriptor, given: &StrategyOptions) -> Self {
        StrategyChoice {
            descriptor,
            options: descriptor.resolve(given),
        }
    }

    /// The strategy called `name` (one of [`STRATEGY_NAMES`]) with the
    /// parameters `wasmrace check` uses when given no other flags; `None`
    /// for an unknown name. `wasmrace bench` selects strategies this way, so
    /// a registered strategy is benchmarked too.
    pub fn from_name(name: &str) -> Option<Self> {
        registry::find(name).map(|d| Self::new(d, &StrategyOptions::NONE))
    }

    /// The built-in strategy called `name`, with its defaults.
    ///
    /// # Panics
    ///
    /// If no strategy is called `name`; [`from_name`](Self::from_name)
    /// returns `None` instead.
    pub fn named(name: &str) -> Self {
        Self::from_name(name).unwrap_or_else(|| panic!("no strategy is called `{name}`"))
    }

    /// This strategy with `given`'s options where set, its own elsewhere.
    pub fn with(&self, given: &StrategyOptions) -> Self {
        Self::new(self.descriptor, &given.or(&self.options))
    }

    /// The strategy's descriptor.
    pub fn descriptor(&self) -> &'static Descriptor {
        self.descriptor
    }

    /// The options it runs with, resolved.
    pub fn options(&self) -> &StrategyOptions {
        &self.options
    }

    /// Its name, as in reports and schedule files (`dfs`, `pos-star`).
    pub fn name(&self) -> &'static str {
        self.descriptor.name
    }

    /// The strategy and the options that shape it, for report headers
    /// (`dfs, preemption bound 2`).
    pub fn describe(&self, seed: u64) -> String {
        (self.descriptor.describe)(&self.options, seed)
    }

    /// SES with the run-to-completion explorer (the paper's best at deep
    /// bugs), no delay bound and a 256 MiB cache.
    pub fn default_ses() -> Self {
        Self::named("ses")
    }

    /// SS with the run-to-completion explorer, `c1 = 10`, `c2 = 3`.
    pub fn default_ss() -> Self {
        Self::named("ss")
    }

    /// The portfolio as `wasmrace check` runs it by default.
    pub fn default_portfolio() -> Self {
        Self::new(registry::default_descriptor(), &StrategyOptions::NONE)
    }

    /// Builds the strategy, seeded, for embedders who drive an `Explorer`
    /// themselves.
    pub fn build(&self, seed: u64) -> Box<dyn Strategy> {
        (self.descriptor.build)(&self.options, seed)
    }
}

/// How [`check`](fn@crate::check) explores a test: the strategy, its seed and the
/// explorer's bounds. The default is what `wasmrace check` runs with no
/// options.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// The strategy. Default: the portfolio.
    pub strategy: StrategyChoice,
    /// Seeds the strategy's random choices (unused by systematic ones); the
    /// same seed and options give the same exploration. Default 0.
    pub seed: u64,
    /// The explorer's bounds and snapshot policy.
    pub explore: Config,
}

impl Default for CheckOptions {
    /// The portfolio (DFS with a preemption bound of 2 for 1,000
    /// executions, then POS, PCT and random walk in turns), seed 0, the
    /// explorer's default bounds.
    fn default() -> Self {
        CheckOptions {
            strategy: StrategyChoice::default_portfolio(),
            seed: 0,
            explore: Config::default(),
        }
    }
}

impl CheckOptions {
    /// The options that shaped the exploration, recorded in schedule files:
    /// `preemption_bound` (null for strategies without one), the explorer's
    /// bounds, and the strategy's other options.
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::Map::new();
        json.insert("preemption_bound".into(), serde_json::Value::Null);
        json.insert("max_steps".into(), self.explore.max_steps.into());
        json.insert("max_executions".into(), self.explore.max_executions.into());
        json.extend((self.strategy.descriptor.options_json)(
            &self.strategy.options,
        ));
        serde_json::Value::Object(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library's default is what `wasmrace check` runs with no flags:
    /// the portfolio, opening with DFS bounded at 2 preemptions.
    #[test]
    fn the_default_options_are_the_clis_portfolio() {
        let opts = CheckOptions::default();
        assert_eq!(opts.strategy, StrategyChoice::default_portfolio());
        assert_eq!(
            opts.strategy,
            StrategyChoice::from_name("portfolio").unwrap()
        );
        assert_eq!(opts.strategy.name(), "portfolio");
        assert_eq!(opts.to_json()["preemption_bound"], 2);
    }

    /// Every registered strategy's report header and schedule-file options,
    /// as the per-strategy code before the registry wrote them.
    #[test]
    fn headers_and_options_json_are_unchanged() {
        let cases = [
            (
                "portfolio",
                "portfolio: dpor, then dfs with preemption bound 2, then pos, pct, random; seed 5",
                r#""preemption_bound":2"#,
            ),
            ("dfs", "dfs, preemption bound 2", r#""preemption_bound":2"#),
            ("random", "random, seed 5", r#""preemption_bound":null"#),
            ("pct", "pct, depth 3, seed 5", r#""preemption_bound":null"#),
            (
                "basic-pos",
                "basic-pos, seed 5",
                r#""preemption_bound":null"#,
            ),
            ("pos", "pos, seed 5", r#""preemption_bound":null"#),
            ("pos-star", "pos-star, seed 5", r#""preemption_bound":null"#),
            (
                "racefuzzer",
                "racefuzzer, seed 5",
                r#""preemption_bound":null"#,
            ),
            (
                "procrastination",
                "procrastination, seed 5",
                r#""preemption_bound":null"#,
            ),
            (
                "ses",
                "ses, explorer rtc, no delay bound, state cache 256 MiB",
                r#""cache_mb":256,"delay_bound":null,"explorer":"rtc","preemption_bound":null"#,
            ),
            (
                "dpor",
                "dpor, optimal, unbounded",
                r#""dpor":"optimal","preemption_bound":null"#,
            ),
            (
                "ss",
                "ss, explorer rtc, 10 x 3^delays samples per delay bound, seed 5",
                r#""c1":10,"c2":3,"explorer":"rtc","preemption_bound":null"#,
            ),
        ];
        assert_eq!(cases.map(|c| c.0), STRATEGY_NAMES);
        for (name, header, json) in cases {
            let opts = CheckOptions {
                strategy: StrategyChoice::named(name),
                explore: Config {
                    max_executions: 7,
                    max_steps: 9,
                    ..Config::default()
                },
                ..CheckOptions::default()
            };
            assert_eq!(opts.strategy.describe(5), header);
            let expected = format!(r#"{{"max_executions":7,"max_steps":9,{json}}}"#);
            let expected: serde_json::Value = serde_json::from_str(&expected).unwrap();
            assert_eq!(opts.to_json(), expected, "{name}");
        }
    }

    /// Options set on a choice override its defaults; options its strategy
    /// does not take are dropped, so equal runs compare equal.
    #[test]
    fn options_resolve_against_the_strategys_defaults() {
        let cached = StrategyChoice::named("dfs").with(&StrategyOptions {
            preemption_bound: Some(None),
            state_cache: Some(true),
            cache_mb: Some(3),
            depth: Some(4),
            ..StrategyOptions::NONE
        });
        assert_eq!(cached.describe(0), "dfs, unbounded, state cache 3 MiB");
        assert_eq!(cached.options().depth, None);
        let opts = CheckOptions {
            strategy: cached,
            ..CheckOptions::default()
        };
        assert_eq!(opts.to_json()["state_cache_mb"], 3);
        assert_eq!(opts.to_json()["preemption_bound"], serde_json::Value::Null);
        let prr = StrategyChoice::named("ses").with(&StrategyOptions {
            explorer: Some(wasmrace_explore::ExplorerKind::ProbabilisticRoundRobin),
            delay_bound: Some(Some(2)),
            ..StrategyOptions::NONE
        });
        assert_eq!(
            prr.describe(3),
            "ses, explorer prr, delay bound 2, state cache 256 MiB, seed 3"
        );
        assert_eq!(
            StrategyChoice::named("pct").with(&StrategyOptions {
                c1: Some(4),
                ..StrategyOptions::NONE
            }),
            StrategyChoice::named("pct")
        );
        assert_eq!(StrategyChoice::from_name("dfs-ish"), None);
    }
}
