//! The built-in strategies, grouped by family, one per file, each citing
//! its paper, plus the combinations and tools around them.
//!
//! - [`systematic`]: [`Dfs`] (Concuerror, ICST 2013), [`Dpor`] (POPL 2014,
//!   JACM 2017), its TruSt-style mode [`Trust`](systematic::dpor::trust::Trust)
//!   (`dpor --dpor trust`, POPL 2022), [`Ses`] (FSE 2015).
//! - [`sampling`]: [`RandomWalk`], [`Pct`] (ASPLOS 2010), [`BasicPos`],
//!   [`Pos`], [`PosStar`] (CAV 2018), [`Ss`] (FSE 2015).
//! - [`directed`]: [`RaceFuzzer`] (PLDI 2008, with its [`HybridDetector`]),
//!   [`Procrastination`] (PULSE, Erlang 2011).
//! - [`delaying`]: the delaying explorers SES and SS run ([`RoundRobin`],
//!   [`RunToCompletion`], [`ProbabilisticRoundRobin`] or your own
//!   [`DelayingExplorer`]).
//! - [`measuring`]: [`Metrics`], [`PartialOrders`], [`Recorder`], run by the
//!   explorer beside any strategy.
//! - [`Portfolio`] combines strategies; [`Replay`] follows a schedule.
//! - [`registry`]: every built-in strategy by name, one [`Descriptor`] each
//!   (declared in the strategy's file, [`descriptor`]), for the CLI,
//!   `check` and `bench`.
//!
//! Every module keeps its old path too (`strategies::dfs`,
//! `strategies::pos`, ...), so embedders' imports keep working.

pub mod delaying;
pub mod descriptor;
pub mod directed;
pub mod measuring;
pub mod portfolio;
pub mod registry;
pub mod replay;
pub mod sampling;
pub mod systematic;

// The modules under their pre-family paths.
pub use delaying::{builtin, prr, rr, rtc};
pub use directed::{procrastination, race_detector, racefuzzer};
pub use measuring::{metrics, pos_bench, record};
pub use sampling::{basic_pos, pct, pos, pos_star, random, ss};
pub use systematic::dpor::trust::DEFAULT_SPLIT_LEVELS;
pub use systematic::{dfs, dpor, ses};

pub use delaying::{
    choices, delay_cycle, first_enabled, is_sound_at, send_target, BuiltinExplorer, DelayCursor,
    DelayingExplorer, ExplorerKind, ProbabilisticRoundRobin, RoundRobin, RunToCompletion,
};
pub use descriptor::{Descriptor, Knob, Refusal, StrategyOptions, Takes};
pub use directed::{
    procrastinate, site_pair, Action, HybridDetector, Procrastination, ProcrastinationOptions,
    ProcrastinationStats, RaceFuzzer, RaceFuzzerOptions, RealRace, RunKind, SitePair,
};
pub use measuring::{
    Metrics, MicroBenchmark, PartialOrders, RecordStats, Recorded, Recorder, Recording,
};
pub use portfolio::Portfolio;
pub use registry::REGISTRY;
pub use replay::{Divergence, DivergenceReason, Replay};
pub use sampling::{BasicPos, Pct, Pos, PosStar, RandomWalk, SampleCount, Ss, SsOptions};
pub use systematic::{Dfs, DfsOptions, Dpor, DporMode, Ses, SesOptions};
