//! A small pure-Rust program language implementing [`Program`], so that
//! strategies can be tested exactly (known interleaving counts, known bugs)
//! without wasm.
//!
//! A model has shared variables and mutexes declared up front, and thread
//! definitions: lists of instructions over 16 per-thread `i64` registers.
//! *Operations* (read, write, lock, spawn, send, `choose`, ...) are scheduling
//! points: a thread stops before each one, and it runs when a strategy picks
//! the thread. *Local* instructions (set a register, jump, assert) touch only
//! the thread's registers, so they run eagerly as part of the step that
//! precedes them (a new thread runs its leading locals when it is spawned).
//! When a thread's code runs out, its pending operation is an implicit `exit`
//! step, as on the wasm host.
//!
//! Identities follow the host exactly: the main thread is
//! `ThreadPath::main()`, the `k`-th thread a thread spawns is `path.child(k)`,
//! and declared objects are `Oid::object(main, i)` in declaration order.
//!
//! ```
//! use wasmrace_explore::model::{reg, ModelBuilder};
//! let mut b = ModelBuilder::new();
//! let x = b.var("x", 0);
//! let w = b.thread("writer", |t| {
//!     t.write(x, 1);
//! });
//! b.main(|t| {
//!     t.spawn(w, 0).read(x, 1).when(reg(1).equals(1), |t| {
//!         t.fail("saw the write");
//!     });
//! });
//! let model = b.build().unwrap();
//! # drop(model);
//! ```

use crate::program::{Onward, OnwardFn, Pending, Program, Status, StepInfo, ThreadView};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use wasmrace_trace::{
    mix64, Access, Decision, Failure, FailureKind, Oid, OpKind, ThreadPath, Tid, Waiting,
};

/// A register index, `0..NUM_REGS`.
pub type Reg = u8;
/// Registers per thread.
pub const NUM_REGS: usize = 16;
/// Local instructions one step may run before the thread reaches its next
/// operation; beyond that the step fails like a wasm step out of fuel (a loop
/// with no scheduling point would otherwise hang the explorer).
pub const FUEL_PER_STEP: u32 = 10_000;

/// A shared variable declared with [`ModelBuilder::var`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarId(u32);

/// A mutex declared with [`ModelBuilder::mutex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MutexId(u32);

/// A thread definition declared with [`ModelBuilder::thread`] or
/// [`ModelBuilder::declare`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DefId(u32);

/// A binary operator of [`Expr::Bin`]. Arithmetic wraps; comparisons and
/// logic yield 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `a + b`, wrapping.
    Add,
    /// `a - b`, wrapping.
    Sub,
    /// `a * b`, wrapping.
    Mul,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b` (signed).
    Lt,
    /// `a <= b` (signed).
    Le,
    /// `a > b` (signed).
    Gt,
    /// `a >= b` (signed).
    Ge,
    /// Both non-zero.
    And,
    /// Either non-zero.
    Or,
}

/// A side-effect-free expression over the running thread's registers.
/// Arithmetic wraps; comparisons and logic yield 0 or 1 and treat any
/// non-zero value as true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A constant.
    Const(i64),
    /// The value of a register of the running thread.
    Reg(Reg),
    /// The running thread's id (the bits of its `Tid`).
    SelfId,
    /// The id of the thread that spawned the running one (0 for `main`).
    ParentId,
    /// `lhs op rhs`.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// 1 if the operand is 0, else 0.
    Not(Box<Expr>),
}

/// The value of register `r`.
pub fn reg(r: Reg) -> Expr {
    Expr::Reg(r)
}

/// A constant.
pub fn lit(v: i64) -> Expr {
    Expr::Const(v)
}

/// The running thread's id.
pub fn self_id() -> Expr {
    Expr::SelfId
}

/// The id of the thread that spawned the running one.
pub fn parent_id() -> Expr {
    Expr::ParentId
}

impl From<i64> for Expr {
    fn from(v: i64) -> Self {
        Expr::Const(v)
    }
}

// Integer literals default to i32, so `reg(0).equals(2)` needs this.
impl From<i32> for Expr {
    fn from(v: i32) -> Self {
        Expr::Const(i64::from(v))
    }
}

impl From<Tid> for Expr {
    fn from(t: Tid) -> Self {
        Expr::Const(t.0 as i64)
    }
}

impl Expr {
    fn bin(self, op: BinOp, rhs: impl Into<Expr>) -> Expr {
        Expr::Bin(op, Box::new(self), Box::new(rhs.into()))
    }
    /// `self == rhs`.
    pub fn equals(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Eq, rhs)
    }
    /// `self != rhs`.
    pub fn not_equals(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ne, rhs)
    }
    /// `self < rhs`.
    pub fn lt(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Lt, rhs)
    }
    /// `self <= rhs`.
    pub fn le(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Le, rhs)
    }
    /// `self > rhs`.
    pub fn gt(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Gt, rhs)
    }
    /// `self >= rhs`.
    pub fn ge(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ge, rhs)
    }
    /// Both non-zero.
    pub fn and(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::And, rhs)
    }
    /// Either non-zero.
    pub fn or(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Or, rhs)
    }

    fn regs_used(&self, out: &mut Vec<Reg>) {
        match self {
            Expr::Reg(r) => out.push(*r),
            Expr::Bin(_, a, b) => {
                a.regs_used(out);
                b.regs_used(out);
            }
            Expr::Not(a) => a.regs_used(out),
            Expr::Const(_) | Expr::SelfId | Expr::ParentId => {}
        }
    }
}

// `reg(0) + 1`, `!cond`: arithmetic and negation read as in Rust.
impl<R: Into<Expr>> std::ops::Add<R> for Expr {
    type Output = Expr;
    fn add(self, rhs: R) -> Expr {
        self.bin(BinOp::Add, rhs)
    }
}

impl<R: Into<Expr>> std::ops::Sub<R> for Expr {
    type Output = Expr;
    fn sub(self, rhs: R) -> Expr {
        self.bin(BinOp::Sub, rhs)
    }
}

impl<R: Into<Expr>> std::ops::Mul<R> for Expr {
    type Output = Expr;
    fn mul(self, rhs: R) -> Expr {
        self.bin(BinOp::Mul, rhs)
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

/// Scheduling points. Each is one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Read {
        var: VarId,
        dst: Reg,
    },
    Write {
        var: VarId,
        value: Expr,
    },
    FetchAdd {
        var: VarId,
        delta: Expr,
        dst: Reg,
    },
    Lock(MutexId),
    Unlock(MutexId),
    Spawn {
        def: DefId,
        args: Vec<Expr>,
        dst: Reg,
    },
    Join {
        target: Expr,
    },
    Send {
        to: Expr,
        value: Expr,
    },
    Recv {
        dst: Reg,
    },
    Choose {
        n: u32,
        dst: Reg,
    },
    Yield,
}

/// Thread-local instructions; `L` is the jump target (a label while
/// building, an instruction index once built).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Local<L> {
    Set { dst: Reg, value: Expr },
    JumpIf { cond: Expr, target: L },
    Assert { cond: Expr, msg: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Instr<L> {
    Op(Op),
    Local(Local<L>),
}

/// A problem in a model's definition, found by [`ModelBuilder::build`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No thread definition was made the main one.
    #[error("the model has no main thread (call `ModelBuilder::main`)")]
    NoMain,
    /// A definition declared ahead was never given a body.
    #[error("thread definition `{name}` was declared but never defined")]
    Undefined {
        /// The definition's name.
        name: String,
    },
    /// A definition was given two bodies.
    #[error("thread definition `{name}` is defined twice")]
    Redefined {
        /// The definition's name.
        name: String,
    },
    /// One thread definition places a label twice.
    #[error("thread `{thread}`: label `{label}` is defined twice")]
    DuplicateLabel {
        /// The thread definition's name.
        thread: String,
        /// The label's name.
        label: String,
    },
    /// A jump names a label its thread definition never places.
    #[error("thread `{thread}`: jump to unknown label `{label}`")]
    UnknownLabel {
        /// The thread definition's name.
        thread: String,
        /// The label's name.
        label: String,
    },
    /// A register index at or over `NUM_REGS`.
    #[error("thread `{thread}`: register {reg} is out of range (0..{NUM_REGS})")]
    BadRegister {
        /// The thread definition's name.
        thread: String,
        /// The register used.
        reg: Reg,
    },
    /// `choose(0)`: a choice with no value to take.
    #[error("thread `{thread}`: `choose(0)` has no alternative")]
    ChooseZero {
        /// The thread definition's name.
        thread: String,
    },
    /// A spawn passes more arguments than a thread has registers.
    #[error(
        "thread `{thread}`: spawn passes {count} arguments but threads have {NUM_REGS} registers"
    )]
    TooManyArgs {
        /// The thread definition's name.
        thread: String,
        /// The arguments passed.
        count: usize,
    },
}

/// A decision the model cannot take. These are strategy or explorer bugs,
/// not failures of the modelled program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A step after the execution finished or failed.
    #[error("the execution has already ended")]
    NotRunning,
    /// The decision names a thread that exited or never existed.
    #[error("thread `{thread}` is not a live thread")]
    NotLive {
        /// The thread's name.
        thread: String,
    },
    /// The decision names a thread whose operation is blocked.
    #[error("thread `{thread}` is not enabled (its next operation `{}` is blocked)", .op.name())]
    Disabled {
        /// The thread's name.
        thread: String,
        /// Its pending operation.
        op: OpKind,
    },
    /// The decision's `alt` is out of range for the pending operation.
    #[error("thread `{thread}` has no alternative {alt} (its operation `{}` has {alts})", .op.name())]
    NoSuchAlternative {
        /// The thread's name.
        thread: String,
        /// Its pending operation.
        op: OpKind,
        /// The alternative asked for.
        alt: u32,
        /// The alternatives the operation has.
        alts: u32,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct ThreadDef {
    pub(crate) name: String,
    pub(crate) code: Vec<Instr<usize>>,
}

#[derive(Clone, Debug)]
pub(crate) struct ModelDef {
    pub(crate) var_names: Vec<String>,
    pub(crate) var_inits: Vec<i64>,
    pub(crate) var_oids: Vec<Oid>,
    pub(crate) mutex_names: Vec<String>,
    pub(crate) mutex_oids: Vec<Oid>,
    pub(crate) defs: Vec<ThreadDef>,
    pub(crate) main: DefId,
}

mod builder;
#[cfg(test)]
mod fair_cache_tests;
#[cfg(test)]
mod forced_tests;
#[cfg(test)]
mod lasso_tests;
#[cfg(test)]
mod onward_tests;
#[cfg(test)]
pub(crate) mod partition_tests;
mod run;
#[cfg(test)]
mod ses_rounds_tests;
#[cfg(test)]
mod shared_cache_tests;
#[cfg(test)]
pub(crate) mod steal_tests;
#[cfg(test)]
mod tests;

pub use builder::{ModelBuilder, ThreadBuilder};
pub use run::{Model, ModelSnapshot};
