//! The built-in strategies, one per file, and the [`Recorder`] wrapper.

pub mod dfs;
pub mod random;
pub mod record;
pub mod replay;

pub use dfs::{Dfs, DfsOptions};
pub use random::RandomWalk;
pub use record::{RecordStats, Recorded, Recorder};
pub use replay::{Divergence, DivergenceReason, Replay};
pub mod portfolio;
pub use portfolio::Portfolio;
pub mod pct;
pub use pct::Pct;
pub mod race_detector;
pub use race_detector::{site_pair, HybridDetector, SitePair};
pub mod procrastination;
pub use procrastination::{
    procrastinate, Action, Procrastination, ProcrastinationOptions, ProcrastinationStats, RunKind,
};
pub mod basic_pos;
pub mod pos;
pub mod pos_star;
pub use basic_pos::BasicPos;
pub use pos::Pos;
pub use pos_star::PosStar;
pub mod racefuzzer;
pub use racefuzzer::{RaceFuzzer, RaceFuzzerOptions, RealRace};
pub mod pos_bench;
pub use pos_bench::{MicroBenchmark, PartialOrders};
