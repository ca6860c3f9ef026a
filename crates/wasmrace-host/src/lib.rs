//! The wasmrace host: loads a guest compiled to wasm, audits and instruments
//! it, and runs its tests one hook call at a time under wasmtime, with exact
//! snapshots, restore and state hashes. [`WasmProgram`] implements
//! `wasmrace_explore::Program`, so every exploration strategy runs on it;
//! [`check`] and [`replay`] are the high-level entry points embedders use.
//!
//! ```no_run
//! use wasmrace_host::{Guest, HostConfig, CheckOptions, StrategyChoice};
//! let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
//! let outcome = wasmrace_host::check(&guest, "lost_update", &CheckOptions::default())?;
//! if let Some(bug) = &outcome.bug {
//!     println!("{}", bug.failure);
//! }
//! # Ok::<(), wasmrace_host::HostError>(())
//! ```

#![deny(missing_docs)]

pub mod bench;
mod check;
mod config;
mod error;
mod guest;
mod hooks;
pub mod load;
mod ops;
mod program;
mod snapshot;
mod world;

pub use check::{
    check, check_with_progress, check_with_strategy, replay, trace_schedule, BugReport,
    CheckOptions, CheckOutcome, RaceReport, ReplayOutcome, StrategyChoice, STRATEGY_NAMES,
};
pub use config::{default_cache_dir, HostConfig};
pub use error::HostError;
pub use guest::Guest;
pub use program::WasmProgram;
pub use snapshot::Snapshot;

/// The strategies, and what a custom one needs: implement
/// [`DelayingExplorer`](strategies::DelayingExplorer) (it sees each step's
/// [`StepInfo`], phases announced with `wasmrace::phase` included), run it
/// with [`Ses`](strategies::Ses) or [`Ss`](strategies::Ss) through
/// [`check_with_strategy`]. Re-exported so embedders need no direct
/// dependency on `wasmrace-explore`.
pub use wasmrace_explore::strategies;
pub use wasmrace_explore::{Config, Report, Stat, StepInfo, Strategy, ThreadView};
