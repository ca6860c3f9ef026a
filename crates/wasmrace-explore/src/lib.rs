//! Exploration of concurrent programs, one scheduling decision at a time.
//!
//! Strategies work on the abstract [`Program`] interface (threads, pending
//! operations with the objects they touch, optional snapshots) and never on
//! wasm. The [`Explorer`] runs a [`Strategy`] against a program within
//! explicit bounds. [`model`] is a small pure-Rust program language used to
//! unit-test strategies exactly.

#![deny(missing_docs)]

pub mod blocking;
pub mod datarace;
pub mod explorer;
pub mod model;
pub mod observer;
mod prefix_tree;
pub mod program;
pub mod splitting;
pub mod state_cache;
pub mod strategies;
pub mod strategy;

pub use blocking::WithoutBlockingAvoidance;
pub use explorer::{
    Blocks, Bug, Config, ExploreError, Explorer, LowestBug, Partition, Report, Split,
};
pub use observer::Observer;
pub use program::{
    is_preemption, Onward, OnwardFn, Pending, Program, Status, StepInfo, ThreadView,
};
pub use state_cache::StateCache;
pub use strategies::{
    BuiltinExplorer, DelayCursor, DelayingExplorer, Dfs, DfsOptions, Divergence, DivergenceReason,
    ExplorerKind, Metrics, PartialOrders, RandomWalk, RecordStats, Recorded, Recorder, Recording,
    Replay, Ses, SesOptions, Ss, SsOptions,
};
pub use strategy::{
    active_name, BoundHit, Context, Outcome, Phase, Profile, RealRace, Role, Splitting, Standing,
    Start, Stat, StatKind, Strategy,
};
pub use wasmrace_trace as trace;
