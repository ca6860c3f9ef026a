//! Shared vocabulary of wasmrace: stable thread and object ids, operations,
//! accesses, failures, readable traces and the versioned schedule file.
//!
//! This crate has no wasm dependency: the explorer, the host and the CLI all
//! speak these types, and a schedule file written by one version of the host
//! is read back here.

#![deny(missing_docs)]

mod failure;
pub mod files;
mod ids;
mod ops;
mod schedule;
pub mod text;
mod trace;

pub use failure::{Failure, FailureKind, Waiting};
pub use ids::{mix64, Oid, ThreadPath, Tid};
pub use ops::{Access, AccessKind, Decision, OpKind, SyncRole};
pub use schedule::{
    DataRaces, Schedule, ScheduleError, ScheduleSettings, ScheduleStep, SCHEDULE_FORMAT,
    SCHEDULE_MAX_BYTES, SCHEDULE_VERSION,
};
pub use trace::{render_trace, ObjectValue, TraceEvent};
