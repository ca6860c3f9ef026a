//! Sampling strategies: each execution is drawn afresh from a seeded
//! distribution. [`RandomWalk`], [`Pct`] (ASPLOS 2010), [`BasicPos`],
//! [`Pos`], [`PosStar`] (CAV 2018) and [`Ss`] (stratified sampling with a
//! delaying explorer, FSE 2015).

pub mod basic_pos;
pub mod pct;
pub mod pos;
pub mod pos_star;
pub mod random;
pub mod ss;

pub use basic_pos::BasicPos;
pub use pct::Pct;
pub use pos::Pos;
pub use pos_star::PosStar;
pub use random::RandomWalk;
pub use ss::{SampleCount, Ss, SsOptions};
