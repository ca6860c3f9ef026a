//! Measuring: what the explorer can run beside any strategy to measure it
//! ([`Metrics`], [`PartialOrders`], [`Recorder`]), and the POS paper's micro
//! benchmark programs ([`MicroBenchmark`]).

pub mod metrics;
pub mod pos_bench;
pub mod record;

pub use metrics::Metrics;
pub use pos_bench::{MicroBenchmark, PartialOrders};
pub use record::{RecordStats, Recorded, Recorder, Recording};
