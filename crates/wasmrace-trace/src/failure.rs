//! Why an execution failed, in a form both humans and schedule files can use.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of failure ended an execution; reports group and compare
/// failures by it (a replay reproduces a bug only with the same kind).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// A guest panic (`assert!`, `unwrap`, ...), with message and location.
    Panic,
    /// A wasm trap that was not a reported panic (e.g. out-of-bounds access).
    Trap,
    /// Every live thread is blocked.
    Deadlock,
    /// The execution took more steps than `max_steps` (possible livelock).
    StepLimit,
    /// Every live thread spins (yields without progress) or is blocked: at
    /// the step limit every enabled thread was in a `yield_now` loop, or,
    /// with a state cache, the execution went back to a state it had
    /// visited, round a cycle every enabled thread takes part in (a lasso).
    Livelock,
    /// One step ran out of fuel: a loop with no scheduling point.
    FuelExhausted,
    /// The guest asked for more memory than its limit.
    MemoryLimit,
    /// A thread ran below the bottom of its shadow stack (into its
    /// neighbour's stack or the heap) between two scheduling points.
    StackOverflow,
    /// The guest misused the API: unlocking a mutex it does not hold, a
    /// handle or thread id that does not exist, waiting on a condition
    /// variable without holding the mutex.
    Misuse,
    /// The process exited with a non-zero code (a std guest's
    /// `std::process::exit(n)` or `proc_exit(n)`).
    Exit,
    /// Two threads accessed a common byte of plain memory, at least one
    /// writing, with no happens-before between them (`--data-races`).
    DataRace,
}

impl FailureKind {
    /// The lowercase name reports print (`api misuse`, `step limit`).
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Panic => "panic",
            FailureKind::Trap => "trap",
            FailureKind::Deadlock => "deadlock",
            FailureKind::StepLimit => "step limit",
            FailureKind::Livelock => "livelock",
            FailureKind::FuelExhausted => "fuel exhausted",
            FailureKind::MemoryLimit => "memory limit",
            FailureKind::StackOverflow => "stack overflow",
            FailureKind::Misuse => "api misuse",
            FailureKind::Exit => "exit",
            FailureKind::DataRace => "data race",
        }
    }
}

/// A blocked thread in a deadlock and what it waits for.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Waiting {
    /// Display form of the blocked thread's path (`main.1`).
    pub thread: String,
    /// What it waits for, in words (`a message (recv on an empty mailbox)`).
    pub waits_for: String,
}

/// Why an execution failed: its kind, the failing thread, a message and,
/// where known, the guest source location and the blocked threads.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Failure {
    /// What kind of failure it is.
    pub kind: FailureKind,
    /// The thread that failed (display form of its path), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// One line saying what went wrong (a panic's message, a bound's flag).
    pub message: String,
    /// `file:line:col` of a panic, when the guest reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// For deadlocks: every blocked thread and what it waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiting>,
    /// One line on what probably caused it and what to use instead, when
    /// the host recognises the cause (std's thread-less `Mutex` on
    /// wasm32-unknown-unknown, ...). Not part of what a failure is:
    /// replays compare kinds, threads and messages. A `Box<str>`: it keeps
    /// `Failure` small, and it is only ever read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Box<str>>,
}

impl Failure {
    /// A failure without a location or blocked threads.
    pub fn new(kind: FailureKind, thread: Option<String>, message: impl Into<String>) -> Self {
        Failure {
            kind,
            thread,
            message: message.into(),
            location: None,
            waiting: Vec::new(),
            hint: None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind.name())?;
        if let Some(t) = &self.thread {
            write!(f, " in thread `{t}`")?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if let Some(l) = &self.location {
            write!(f, " at {l}")?;
        }
        Ok(())
    }
}
