//! The delaying-explorer family (Desai, Qadeer & Seshia, FSE 2015): the
//! [`DelayingExplorer`] interface and [`DelayCursor`] (`explorer.rs`), the
//! built-in explorers `rr`, `rtc`, `prr` (one file each) and the factory
//! that names them (`builtin.rs`). The strategies that run an explorer,
//! [`Ses`](crate::strategies::Ses) and [`Ss`](crate::strategies::Ss), live
//! with their families (systematic, sampling).

pub mod builtin;
pub mod explorer;
pub mod prr;
pub mod rr;
pub mod rtc;

pub use builtin::{BuiltinExplorer, ExplorerKind};
pub use explorer::{
    choices, delay_cycle, first_enabled, is_sound_at, send_target, DelayCursor, DelayingExplorer,
};
pub use prr::ProbabilisticRoundRobin;
pub use rr::RoundRobin;
pub use rtc::RunToCompletion;

#[cfg(test)]
pub(crate) use explorer::views;
