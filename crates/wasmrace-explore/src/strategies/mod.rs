//! The built-in strategies, one per file, each citing its paper, plus the
//! wrappers and tools around them.
//!
//! Systematic: [`Dfs`] (Concuerror, ICST 2013), [`Ses`] (delaying
//! explorers, FSE 2015, with [`RoundRobin`], [`RunToCompletion`],
//! [`ProbabilisticRoundRobin`] or your own [`DelayingExplorer`]). Sampling:
//! [`RandomWalk`], [`Pct`] (ASPLOS 2010), [`BasicPos`], [`Pos`], [`PosStar`]
//! (CAV 2018), [`Ss`] (FSE 2015).
//! Directed: [`RaceFuzzer`] (PLDI 2008, with its [`HybridDetector`]),
//! [`Procrastination`] (PULSE, Erlang 2011). Combinations and wrappers:
//! [`Portfolio`], [`Replay`], [`Recorder`], [`PartialOrders`], [`Metrics`].

pub mod basic_pos;
pub mod dfs;
pub mod metrics;
pub mod pct;
pub mod portfolio;
pub mod pos;
pub mod pos_bench;
pub mod pos_star;
pub mod procrastination;
pub mod race_detector;
pub mod racefuzzer;
pub mod random;
pub mod record;
pub mod replay;

pub use basic_pos::BasicPos;
pub use dfs::{Dfs, DfsOptions};
pub use metrics::Metrics;
pub use pct::Pct;
pub use portfolio::Portfolio;
pub use pos::Pos;
pub use pos_bench::{MicroBenchmark, PartialOrders};
pub use pos_star::PosStar;
pub use procrastination::{
    procrastinate, Action, Procrastination, ProcrastinationOptions, ProcrastinationStats, RunKind,
};
pub use race_detector::{site_pair, HybridDetector, SitePair};
pub use racefuzzer::{RaceFuzzer, RaceFuzzerOptions, RealRace};
pub use random::RandomWalk;
pub use record::{RecordStats, Recorded, Recorder};
pub use replay::{Divergence, DivergenceReason, Replay};

// Delaying explorers (Desai, Qadeer & Seshia, FSE 2015): the interface and
// the built-in explorers.
pub mod delaying;
pub mod prr;
pub mod rr;
pub mod rtc;
pub mod ses;
pub mod ss;

pub use delaying::{
    choices, delay_cycle, first_enabled, is_sound_at, send_target, BuiltinExplorer, DelayCursor,
    DelayingExplorer, ExplorerKind,
};
pub use prr::ProbabilisticRoundRobin;
pub use rr::RoundRobin;
pub use rtc::RunToCompletion;
pub use ses::{Ses, SesOptions};
pub use ss::{SampleCount, Ss, SsOptions};
