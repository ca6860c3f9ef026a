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

pub mod bench;
mod check;
mod config;
mod error;
mod guest;
pub mod load;
mod program;
mod snapshot;
mod world;

pub use check::{
    check, check_with_progress, replay, trace_schedule, BugReport, CheckOptions, CheckOutcome,
    RaceReport, ReplayOutcome, StrategyChoice, STRATEGY_NAMES,
};
pub use config::{default_cache_dir, HostConfig};
pub use error::HostError;
pub use guest::Guest;
pub use program::WasmProgram;
pub use snapshot::Snapshot;
