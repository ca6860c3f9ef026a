//! Directed strategies: they steer executions towards what an analysis
//! found. [`RaceFuzzer`] (PLDI 2008) with its [`HybridDetector`], and
//! [`Procrastination`] (PULSE, Erlang Workshop 2011).

pub mod procrastination;
pub mod race_detector;
pub mod racefuzzer;

pub use procrastination::{
    procrastinate, Action, Procrastination, ProcrastinationOptions, ProcrastinationStats, RunKind,
};
pub use race_detector::{site_pair, HybridDetector, SitePair};
pub use racefuzzer::{RaceFuzzer, RaceFuzzerOptions, RealRace};
