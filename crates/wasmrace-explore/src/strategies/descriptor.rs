//! What a strategy declares about itself for the tools: its
//! [`Descriptor`] (name, help line, the [`Knob`]s it takes, their
//! defaults, how to build and describe it), and the [`StrategyOptions`]
//! the knobs set. Each strategy's file declares its own descriptor; the
//! [`registry`](super::registry) lists them.

use super::delaying::ExplorerKind;
use super::systematic::dpor::mode::DporMode;
use crate::strategy::Strategy;
use serde_json::{Map, Value};

/// A group of strategy options, as the CLI spells it: one or more flags
/// that set fields of [`StrategyOptions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Knob {
    /// `--preemption-bound` / `--unbounded`: `preemption_bound`.
    PreemptionBound,
    /// `--depth`: `depth`.
    Depth,
    /// `--state-cache`: `state_cache`.
    StateCache,
    /// `--delay-bound`: `delay_bound`.
    DelayBound,
    /// `--explorer`: `explorer`.
    Explorer,
    /// `--cache-mb`: `cache_mb`.
    CacheMb,
    /// `--c1` / `--c2`: `c1` and `c2`.
    Samples,
    /// `--dpor`: which DPOR algorithm (`dpor`).
    Dpor,
    /// `--frontier-mb`: `frontier_mb`.
    FrontierMb,
}

impl Knob {
    /// Every knob, in the order the CLI checks them.
    pub const ALL: [Knob; 9] = [
        Knob::PreemptionBound,
        Knob::Depth,
        Knob::StateCache,
        Knob::DelayBound,
        Knob::Explorer,
        Knob::CacheMb,
        Knob::Samples,
        Knob::Dpor,
        Knob::FrontierMb,
    ];

    /// The CLI flags that set this knob.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            Knob::PreemptionBound => &["--preemption-bound", "--unbounded"],
            Knob::Depth => &["--depth"],
            Knob::StateCache => &["--state-cache"],
            Knob::DelayBound => &["--delay-bound"],
            Knob::Explorer => &["--explorer"],
            Knob::CacheMb => &["--cache-mb"],
            Knob::Samples => &["--c1", "--c2"],
            Knob::Dpor => &["--dpor"],
            Knob::FrontierMb => &["--frontier-mb"],
        }
    }
}

/// The options of the built-in strategies. `None` means "not set": the
/// strategy's default applies, or the strategy does not take the option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StrategyOptions {
    /// Preemptions per execution at most; `Some(None)`: unbounded.
    pub preemption_bound: Option<Option<u32>>,
    /// Whether states already explored are skipped (a cache of state hashes).
    pub state_cache: Option<bool>,
    /// PCT's priority change points.
    pub depth: Option<u32>,
    /// The delaying explorer of SES and SS.
    pub explorer: Option<ExplorerKind>,
    /// Delays per execution at most; `Some(None)`: no bound.
    pub delay_bound: Option<Option<u32>>,
    /// Memory for the cache of explored states, in MiB.
    pub cache_mb: Option<u64>,
    /// SS's samples with no delay (`c1` of `c1 * c2^d`).
    pub c1: Option<u64>,
    /// SS's growth of the samples per extra delay (`c2`).
    pub c2: Option<u64>,
    /// DPOR's algorithm, optimal or source.
    pub dpor: Option<DporMode>,
    /// Memory for the jobs `dpor --dpor trust` has yet to run, per
    /// thread, in MiB.
    pub frontier_mb: Option<u64>,
}

impl StrategyOptions {
    /// No option set (`Default::default()`, usable in constants).
    pub const NONE: StrategyOptions = StrategyOptions {
        preemption_bound: None,
        state_cache: None,
        depth: None,
        explorer: None,
        delay_bound: None,
        cache_mb: None,
        c1: None,
        c2: None,
        dpor: None,
        frontier_mb: None,
    };

    /// Whether the knob is set; `state_cache: Some(false)` counts as not
    /// set, as not giving `--state-cache` does.
    pub fn is_set(&self, knob: Knob) -> bool {
        match knob {
            Knob::PreemptionBound => self.preemption_bound.is_some(),
            Knob::Depth => self.depth.is_some(),
            Knob::StateCache => self.state_cache == Some(true),
            Knob::DelayBound => self.delay_bound.is_some(),
            Knob::Explorer => self.explorer.is_some(),
            Knob::CacheMb => self.cache_mb.is_some(),
            Knob::Samples => self.c1.is_some() || self.c2.is_some(),
            Knob::Dpor => self.dpor.is_some(),
            Knob::FrontierMb => self.frontier_mb.is_some(),
        }
    }

    /// Each field of `self`, or of `fallback` where `self`'s is not set.
    pub fn or(self, fallback: &StrategyOptions) -> StrategyOptions {
        StrategyOptions {
            preemption_bound: self.preemption_bound.or(fallback.preemption_bound),
            state_cache: self.state_cache.or(fallback.state_cache),
            depth: self.depth.or(fallback.depth),
            explorer: self.explorer.or(fallback.explorer),
            delay_bound: self.delay_bound.or(fallback.delay_bound),
            cache_mb: self.cache_mb.or(fallback.cache_mb),
            c1: self.c1.or(fallback.c1),
            c2: self.c2.or(fallback.c2),
            dpor: self.dpor.or(fallback.dpor),
            frontier_mb: self.frontier_mb.or(fallback.frontier_mb),
        }
    }

    /// `self` with the fields of `knob` unset.
    fn without(mut self, knob: Knob) -> StrategyOptions {
        match knob {
            Knob::PreemptionBound => self.preemption_bound = None,
            Knob::Depth => self.depth = None,
            Knob::StateCache => self.state_cache = None,
            Knob::DelayBound => self.delay_bound = None,
            Knob::Explorer => self.explorer = None,
            Knob::CacheMb => self.cache_mb = None,
            Knob::Samples => (self.c1, self.c2) = (None, None),
            Knob::Dpor => self.dpor = None,
            Knob::FrontierMb => self.frontier_mb = None,
        }
        self
    }
}

/// A knob a strategy takes, perhaps only when another knob is set (DFS
/// takes `--cache-mb` only with `--state-cache`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Takes {
    /// The knob taken.
    pub knob: Knob,
    /// The knob that must be set for this one to apply, if any.
    pub only_with: Option<Knob>,
}

impl Takes {
    /// A knob taken whatever else is set.
    pub const fn always(knob: Knob) -> Takes {
        Takes {
            knob,
            only_with: None,
        }
    }
}

/// A combination of options a strategy takes each flag of but cannot run
/// with, refused in one line rather than changed silently.
#[derive(Clone, Copy, Debug)]
pub struct Refusal {
    /// The knob whose flag the message is about.
    pub knob: Knob,
    /// Whether the options given (as the user gave them, not resolved)
    /// are refused.
    pub when: fn(&StrategyOptions) -> bool,
    /// The message, one line.
    pub message: &'static str,
}

/// Everything the tools know about one strategy.
pub struct Descriptor {
    /// The name the CLI, reports and schedule files use (`dfs`, `pos-star`).
    pub name: &'static str,
    /// One line for `--strategy`'s help, citing the paper.
    pub about: &'static str,
    /// The knobs the strategy takes; giving it any other is refused.
    pub takes: &'static [Takes],
    /// What the strategy always does that a knob turns on for others, with
    /// the words that say so (SES: `--state-cache`, "always caches states").
    pub always: &'static [(Knob, &'static str)],
    /// The values of the options the strategy takes when none is given.
    pub defaults: StrategyOptions,
    /// Options it takes the flags for but cannot run with together
    /// (`dpor`: `--dpor optimal` with a preemption bound); most have none.
    pub refuses: &'static [Refusal],
    /// Builds the strategy, seeded, from options [`resolve`](Self::resolve)d.
    pub build: fn(&StrategyOptions, u64) -> Box<dyn Strategy>,
    /// The strategy and the options that shape it, for report headers
    /// (`dfs, preemption bound 2`).
    pub describe: fn(&StrategyOptions, u64) -> String,
    /// The strategy's options for schedule files, keyed as they appear there.
    pub options_json: fn(&StrategyOptions) -> Map<String, Value>,
}

impl std::fmt::Debug for Descriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Descriptor")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Descriptor {
    /// Whether the strategy takes `knob` given the options set in `given`.
    pub fn accepts(&self, knob: Knob, given: &StrategyOptions) -> bool {
        self.takes
            .iter()
            .any(|t| t.knob == knob && t.only_with.is_none_or(|k| given.is_set(k)))
    }

    /// Why the strategy cannot run with `given`, about `knob`'s flag, if
    /// one of its [`refuses`](Self::refuses) says so.
    pub fn refusal(&self, knob: Knob, given: &StrategyOptions) -> Option<&'static str> {
        let refused = self
            .refuses
            .iter()
            .find(|r| r.knob == knob && (r.when)(given));
        refused.map(|r| r.message)
    }

    /// The options the strategy runs with: `given` where set, the defaults
    /// elsewhere, and nothing for the knobs it does not take (so that two
    /// choices that run alike compare equal).
    pub fn resolve(&self, given: &StrategyOptions) -> StrategyOptions {
        let set = given.or(&self.defaults);
        Knob::ALL
            .into_iter()
            .filter(|&k| !self.accepts(k, &set))
            .fold(set, StrategyOptions::without)
    }
}
