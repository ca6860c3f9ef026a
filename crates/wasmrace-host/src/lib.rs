//! The wasmrace host: loads a guest compiled to wasm, audits and instruments
//! it, and runs its tests one hook call at a time under wasmtime, with exact
//! snapshots, restore and state hashes. [`WasmProgram`] implements
//! [`Program`], so every exploration strategy runs on it; [`check`] and
//! [`replay`] are the high-level entry points embedders use. What an
//! embedder needs from the explore and trace crates is re-exported here
//! ([`Explorer`], [`Strategy`], [`Observer`], [`render_trace`], ...), so
//! `wasmrace-host` is its only dependency.
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
//!
//! Or drive the exploration yourself, with any [`Strategy`] (one of your
//! own included) and [`Observer`]s beside it (see `examples/embed.rs`):
//!
//! ```no_run
//! use wasmrace_host::strategies::Dfs;
//! use wasmrace_host::{render_trace, trace_schedule, Config, Explorer, Guest, HostConfig, Metrics};
//! let guest = Guest::load("app.wasm".as_ref(), HostConfig::default())?;
//! let mut explorer = Explorer::new(guest.program("lost_update")?, Config::default());
//! let mut metrics = Metrics::new();
//! let report = explorer.run_observed(&mut Dfs::with_preemption_bound(2), &mut metrics)?;
//! println!("{} distinct interleavings", metrics.distinct_orders());
//! if let Some(bug) = report.first_bug() {
//!     let (trace, _) = trace_schedule(&mut explorer.program, &bug.schedule)?;
//!     print!("{}", render_trace(&trace));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

pub mod analysis;
pub mod bench;
mod check;
mod config;
mod error;
mod guest;
mod hints;
mod hooks;
pub mod load;
mod ops;
mod program;
mod progress;
mod snapshot;
mod world;

pub use analysis::bisect::{
    bisect, Alternative, BisectOptions, Bisection, Decisive, Sealing, StepEstimate,
};
pub use analysis::same_failure;
pub use analysis::shrink::{
    run_candidate, shrink, shrink_bug, CandidateRun, ScheduleStats, ShrinkOptions, Shrunk,
};
pub use check::{
    check, check_jobs, check_jobs_with_progress, check_with_progress, check_with_strategy, replay,
    trace_schedule, BugReport, CheckOptions, CheckOutcome, NothingToInterleave, RaceReport,
    ReplayOutcome, StrategyChoice, STRATEGY_NAMES,
};
pub use config::{
    default_cache_dir, default_instance_slots, instance_slots_for, HostConfig, RACE_FUEL_FACTOR,
};
pub use error::HostError;
pub use guest::Guest;
pub use hooks::races::ReportedRaces;
pub use program::WasmProgram;
pub use snapshot::Snapshot;

/// The strategies, and what a custom one needs: implement
/// [`DelayingExplorer`](strategies::DelayingExplorer) (it sees each step's
/// [`StepInfo`], phases announced with `wasmrace::phase` included), run it
/// with [`Ses`](strategies::Ses) or [`Ss`](strategies::Ss) through
/// [`check_with_strategy`]. Re-exported so embedders need no direct
/// dependency on `wasmrace-explore`.
pub use wasmrace_explore::strategies;

// What an embedder needs to drive an exploration itself (an `Explorer` over
// a `WasmProgram`, with any `Strategy` or one of its own, and `Observer`s
// beside it), re-exported so that `wasmrace-host` is its only dependency.
pub use wasmrace_explore::{
    is_preemption, BoundHit, Bug, Config, Context, ExploreError, Explorer, Metrics, Observer,
    Outcome, Pending, Profile, Program, RealRace, Report, Standing, Start, Stat, Status, StepInfo,
    Strategy, ThreadView, WithoutBlockingAvoidance,
};
// The vocabulary of results: failures, traces, schedules and ids.
pub use wasmrace_trace::{
    render_trace, Access, AccessKind, Decision, Failure, FailureKind, ObjectValue, Oid, OpKind,
    Schedule, ScheduleError, ScheduleStep, ThreadPath, Tid, TraceEvent, Waiting,
    SCHEDULE_MAX_BYTES,
};
