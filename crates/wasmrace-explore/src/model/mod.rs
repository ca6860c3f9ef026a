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

use crate::program::{Pending, Program, Status, StepInfo, ThreadView};
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// A side-effect-free expression over the running thread's registers.
/// Arithmetic wraps; comparisons and logic yield 0 or 1 and treat any
/// non-zero value as true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Const(i64),
    Reg(Reg),
    /// The running thread's id (the bits of its `Tid`).
    SelfId,
    /// The id of the thread that spawned the running one (0 for `main`).
    ParentId,
    Bin(BinOp, Box<Expr>, Box<Expr>),
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
    pub fn equals(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Eq, rhs)
    }
    pub fn not_equals(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ne, rhs)
    }
    pub fn lt(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Lt, rhs)
    }
    pub fn le(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Le, rhs)
    }
    pub fn gt(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Gt, rhs)
    }
    pub fn ge(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::Ge, rhs)
    }
    pub fn and(self, rhs: impl Into<Expr>) -> Expr {
        self.bin(BinOp::And, rhs)
    }
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
enum Op {
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
enum Local<L> {
    Set { dst: Reg, value: Expr },
    JumpIf { cond: Expr, target: L },
    Assert { cond: Expr, msg: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Instr<L> {
    Op(Op),
    Local(Local<L>),
}

/// A problem in a model's definition, found by [`ModelBuilder::build`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("the model has no main thread (call `ModelBuilder::main`)")]
    NoMain,
    #[error("thread definition `{name}` was declared but never defined")]
    Undefined { name: String },
    #[error("thread definition `{name}` is defined twice")]
    Redefined { name: String },
    #[error("thread `{thread}`: label `{label}` is defined twice")]
    DuplicateLabel { thread: String, label: String },
    #[error("thread `{thread}`: jump to unknown label `{label}`")]
    UnknownLabel { thread: String, label: String },
    #[error("thread `{thread}`: register {reg} is out of range (0..{NUM_REGS})")]
    BadRegister { thread: String, reg: Reg },
    #[error("thread `{thread}`: `choose(0)` has no alternative")]
    ChooseZero { thread: String },
    #[error(
        "thread `{thread}`: spawn passes {count} arguments but threads have {NUM_REGS} registers"
    )]
    TooManyArgs { thread: String, count: usize },
}

/// A decision the model cannot take. These are strategy or explorer bugs,
/// not failures of the modelled program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("the execution has already ended")]
    NotRunning,
    #[error("thread `{thread}` is not a live thread")]
    NotLive { thread: String },
    #[error("thread `{thread}` is not enabled (its next operation `{}` is blocked)", .op.name())]
    Disabled { thread: String, op: OpKind },
    #[error("thread `{thread}` has no alternative {alt} (its operation `{}` has {alts})", .op.name())]
    NoSuchAlternative {
        thread: String,
        op: OpKind,
        alt: u32,
        alts: u32,
    },
}

#[derive(Clone, Debug)]
struct ThreadDef {
    name: String,
    code: Vec<Instr<usize>>,
}

#[derive(Clone, Debug)]
struct ModelDef {
    var_names: Vec<String>,
    var_inits: Vec<i64>,
    var_oids: Vec<Oid>,
    mutex_names: Vec<String>,
    mutex_oids: Vec<Oid>,
    defs: Vec<ThreadDef>,
    main: DefId,
}

/// Builds a [`Model`]. Objects and thread definitions are declared first;
/// errors in thread code (bad registers, unknown labels) are collected and
/// reported by [`build`](ModelBuilder::build).
#[derive(Default)]
pub struct ModelBuilder {
    objects: u32,
    var_names: Vec<String>,
    var_inits: Vec<i64>,
    var_oids: Vec<Oid>,
    mutex_names: Vec<String>,
    mutex_oids: Vec<Oid>,
    defs: Vec<(String, Option<Vec<Built>>)>,
    main: Option<DefId>,
    errors: Vec<BuildError>,
}

impl ModelBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn next_oid(&mut self) -> Oid {
        let oid = Oid::object(ThreadPath::main().tid(), self.objects);
        self.objects += 1;
        oid
    }

    /// A shared variable with an initial value.
    pub fn var(&mut self, name: &str, init: i64) -> VarId {
        let oid = self.next_oid();
        self.var_names.push(name.to_string());
        self.var_inits.push(init);
        self.var_oids.push(oid);
        VarId(self.var_names.len() as u32 - 1)
    }

    /// A mutex, initially free.
    pub fn mutex(&mut self, name: &str) -> MutexId {
        let oid = self.next_oid();
        self.mutex_names.push(name.to_string());
        self.mutex_oids.push(oid);
        MutexId(self.mutex_names.len() as u32 - 1)
    }

    /// Declares a thread definition to be given code later with
    /// [`define`](Self::define), so that definitions can spawn each other.
    pub fn declare(&mut self, name: &str) -> DefId {
        self.defs.push((name.to_string(), None));
        DefId(self.defs.len() as u32 - 1)
    }

    /// Gives a declared thread definition its code.
    pub fn define(&mut self, def: DefId, code: impl FnOnce(&mut ThreadBuilder)) {
        let name = self.defs[def.0 as usize].0.clone();
        let mut t = ThreadBuilder::new(&name);
        code(&mut t);
        self.errors.append(&mut t.errors);
        let slot = &mut self.defs[def.0 as usize].1;
        if slot.is_some() {
            self.errors.push(BuildError::Redefined { name });
        } else {
            *slot = Some(t.code);
        }
    }

    /// Declares and defines a thread definition.
    pub fn thread(&mut self, name: &str, code: impl FnOnce(&mut ThreadBuilder)) -> DefId {
        let def = self.declare(name);
        self.define(def, code);
        def
    }

    /// Defines the code of the main thread.
    pub fn main(&mut self, code: impl FnOnce(&mut ThreadBuilder)) -> DefId {
        let def = self.thread("main", code);
        if self.main.is_some() {
            self.errors.push(BuildError::Redefined {
                name: "main".into(),
            });
        }
        self.main = Some(def);
        def
    }

    pub fn build(self) -> Result<Model, BuildError> {
        if let Some(e) = self.errors.into_iter().next() {
            return Err(e);
        }
        let main = self.main.ok_or(BuildError::NoMain)?;
        let mut defs = Vec::with_capacity(self.defs.len());
        for (name, code) in self.defs {
            let code = code.ok_or_else(|| BuildError::Undefined { name: name.clone() })?;
            defs.push(ThreadDef {
                code: resolve(&name, code)?,
                name,
            });
        }
        let def = ModelDef {
            var_names: self.var_names,
            var_inits: self.var_inits,
            var_oids: self.var_oids,
            mutex_names: self.mutex_names,
            mutex_oids: self.mutex_oids,
            defs,
            main,
        };
        Ok(Model::new(Arc::new(def)))
    }
}

/// What a thread builder records: instructions with symbolic jump targets,
/// and label positions.
#[derive(Clone, Debug)]
enum Built {
    Instr(Instr<String>),
    Label(String),
}

/// Turns labels into instruction indices.
fn resolve(thread: &str, code: Vec<Built>) -> Result<Vec<Instr<usize>>, BuildError> {
    let mut labels = BTreeMap::new();
    let mut body = Vec::with_capacity(code.len());
    for b in code {
        match b {
            Built::Label(name) => {
                if labels.insert(name.clone(), body.len()).is_some() {
                    return Err(BuildError::DuplicateLabel {
                        thread: thread.into(),
                        label: name,
                    });
                }
            }
            Built::Instr(ins) => body.push(ins),
        }
    }
    body.into_iter()
        .map(|ins| match ins {
            Instr::Op(op) => Ok(Instr::Op(op)),
            Instr::Local(Local::Set { dst, value }) => Ok(Instr::Local(Local::Set { dst, value })),
            Instr::Local(Local::Assert { cond, msg }) => {
                Ok(Instr::Local(Local::Assert { cond, msg }))
            }
            Instr::Local(Local::JumpIf { cond, target }) => match labels.get(&target) {
                Some(&at) => Ok(Instr::Local(Local::JumpIf { cond, target: at })),
                None => Err(BuildError::UnknownLabel {
                    thread: thread.into(),
                    label: target,
                }),
            },
        })
        .collect()
}

/// Appends instructions to one thread definition. Every method returns
/// `&mut Self` so that code reads top to bottom.
pub struct ThreadBuilder {
    name: String,
    code: Vec<Built>,
    errors: Vec<BuildError>,
    auto_labels: u32,
}

impl ThreadBuilder {
    fn new(name: &str) -> Self {
        ThreadBuilder {
            name: name.into(),
            code: Vec::new(),
            errors: Vec::new(),
            auto_labels: 0,
        }
    }

    fn check_reg(&mut self, r: Reg) {
        if usize::from(r) >= NUM_REGS {
            self.errors.push(BuildError::BadRegister {
                thread: self.name.clone(),
                reg: r,
            });
        }
    }

    fn check_expr(&mut self, e: &Expr) {
        let mut regs = Vec::new();
        e.regs_used(&mut regs);
        for r in regs {
            self.check_reg(r);
        }
    }

    fn op(&mut self, op: Op) -> &mut Self {
        self.code.push(Built::Instr(Instr::Op(op)));
        self
    }

    /// `dst = var` (one step, a read of `var`).
    pub fn read(&mut self, var: VarId, dst: Reg) -> &mut Self {
        self.check_reg(dst);
        self.op(Op::Read { var, dst })
    }

    /// `var = value` (one step, a write of `var`).
    pub fn write(&mut self, var: VarId, value: impl Into<Expr>) -> &mut Self {
        let value = value.into();
        self.check_expr(&value);
        self.op(Op::Write { var, value })
    }

    /// `dst = var; var += delta` atomically (one step, a write of `var`).
    pub fn fetch_add(&mut self, var: VarId, delta: impl Into<Expr>, dst: Reg) -> &mut Self {
        let delta = delta.into();
        self.check_expr(&delta);
        self.check_reg(dst);
        self.op(Op::FetchAdd { var, delta, dst })
    }

    /// Acquires `m`; disabled while anyone (this thread included) holds it.
    pub fn lock(&mut self, m: MutexId) -> &mut Self {
        self.op(Op::Lock(m))
    }

    /// Releases `m`; an api-misuse failure unless this thread holds it.
    pub fn unlock(&mut self, m: MutexId) -> &mut Self {
        self.op(Op::Unlock(m))
    }

    /// Spawns a thread running `def`; its id goes to `dst`.
    pub fn spawn(&mut self, def: DefId, dst: Reg) -> &mut Self {
        self.spawn_with(def, dst, [])
    }

    /// Spawns a thread running `def` with its registers `0..args.len()`
    /// set to `args` (evaluated by the spawning thread); its id goes to `dst`.
    pub fn spawn_with(
        &mut self,
        def: DefId,
        dst: Reg,
        args: impl IntoIterator<Item = Expr>,
    ) -> &mut Self {
        let args: Vec<Expr> = args.into_iter().collect();
        if args.len() > NUM_REGS {
            self.errors.push(BuildError::TooManyArgs {
                thread: self.name.clone(),
                count: args.len(),
            });
        }
        for a in &args {
            self.check_expr(a);
        }
        self.check_reg(dst);
        self.op(Op::Spawn { def, args, dst })
    }

    /// Waits for the thread whose id `target` evaluates to; disabled while
    /// that thread is alive.
    pub fn join(&mut self, target: impl Into<Expr>) -> &mut Self {
        let target = target.into();
        self.check_expr(&target);
        self.op(Op::Join { target })
    }

    /// Appends `value` to the mailbox of thread `to`; never blocks; dropped if
    /// `to` has exited (as on the host).
    pub fn send(&mut self, to: impl Into<Expr>, value: impl Into<Expr>) -> &mut Self {
        let (to, value) = (to.into(), value.into());
        self.check_expr(&to);
        self.check_expr(&value);
        self.op(Op::Send { to, value })
    }

    /// Takes the oldest message of this thread's mailbox into `dst`;
    /// disabled while the mailbox is empty.
    pub fn recv(&mut self, dst: Reg) -> &mut Self {
        self.check_reg(dst);
        self.op(Op::Recv { dst })
    }

    /// `dst` = a value in `0..n` picked by the strategy (`n` alternatives).
    pub fn choose(&mut self, n: u32, dst: Reg) -> &mut Self {
        if n == 0 {
            self.errors.push(BuildError::ChooseZero {
                thread: self.name.clone(),
            });
        }
        self.check_reg(dst);
        self.op(Op::Choose { n, dst })
    }

    /// A step with no effect; switching away after it is not a preemption.
    pub fn yield_now(&mut self) -> &mut Self {
        self.op(Op::Yield)
    }

    /// Local: `dst = value`.
    pub fn set(&mut self, dst: Reg, value: impl Into<Expr>) -> &mut Self {
        let value = value.into();
        self.check_reg(dst);
        self.check_expr(&value);
        self.code
            .push(Built::Instr(Instr::Local(Local::Set { dst, value })));
        self
    }

    /// Marks the position of the next instruction as `name`.
    pub fn label(&mut self, name: &str) -> &mut Self {
        self.code.push(Built::Label(name.to_string()));
        self
    }

    /// Local: jump to `label` if `cond` is non-zero.
    pub fn jump_if(&mut self, cond: impl Into<Expr>, label: &str) -> &mut Self {
        let cond = cond.into();
        self.check_expr(&cond);
        self.code.push(Built::Instr(Instr::Local(Local::JumpIf {
            cond,
            target: label.to_string(),
        })));
        self
    }

    /// Local: jump to `label`.
    pub fn jump(&mut self, label: &str) -> &mut Self {
        self.jump_if(lit(1), label)
    }

    /// Runs `body` only when `cond` is non-zero.
    pub fn when(
        &mut self,
        cond: impl Into<Expr>,
        body: impl FnOnce(&mut ThreadBuilder),
    ) -> &mut Self {
        // A NUL byte keeps generated labels apart from user labels.
        let end = format!("\0when{}", self.auto_labels);
        self.auto_labels += 1;
        self.jump_if(!cond.into(), &end);
        body(self);
        self.label(&end)
    }

    /// Local: fails the execution with a panic carrying `msg` unless `cond`
    /// is non-zero.
    pub fn assert(&mut self, cond: impl Into<Expr>, msg: &str) -> &mut Self {
        let cond = cond.into();
        self.check_expr(&cond);
        self.code.push(Built::Instr(Instr::Local(Local::Assert {
            cond,
            msg: msg.to_string(),
        })));
        self
    }

    /// Local: fails the execution with a panic carrying `msg`.
    pub fn fail(&mut self, msg: &str) -> &mut Self {
        self.assert(lit(0), msg)
    }
}

/// One thread of a running model, exited ones included (their liveness
/// matters to joins and their names to traces).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ThreadState {
    path: ThreadPath,
    tid: Tid,
    parent: Tid,
    def: DefId,
    /// Index of the next instruction; `code.len()` means "exit is pending".
    pc: usize,
    regs: [i64; NUM_REGS],
    /// Threads spawned so far (the next child is `path.child(children + 1)`).
    children: u32,
    /// Messages sent so far (the next send's index), as on the host.
    sends: u32,
    mailbox: VecDeque<Message>,
    alive: bool,
    /// The thread failed (an assert, running out of fuel) in the middle of
    /// its local instructions; it has no pending operation any more.
    crashed: bool,
}

/// A message in a mailbox: its value, and its identity (sender, index of the
/// send among the sender's sends) reported in `StepInfo::message` by the send
/// and by the receive that takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Message {
    from: Tid,
    seq: u32,
    value: i64,
}

/// Everything that changes while a model runs; snapshots are clones of it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    vars: Vec<i64>,
    holders: Vec<Option<Tid>>,
    /// In creation order.
    threads: Vec<ThreadState>,
    status: Status,
}

/// A snapshot of a [`Model`]: a copy of its whole state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSnapshot(State);

/// A runnable model; see the module documentation. Cloning is cheap for the
/// definitions (shared) and copies the state.
#[derive(Clone, Debug)]
pub struct Model {
    def: Arc<ModelDef>,
    state: State,
    /// Live threads and their pending operations, derived from `state`.
    views: Vec<ThreadView>,
    info: StepInfo,
}

fn site(def: DefId, pc: usize) -> u64 {
    // Never 0 (which means "unknown site"), stable across executions.
    ((u64::from(def.0) + 1) << 32) | pc as u64
}

impl Model {
    fn new(def: Arc<ModelDef>) -> Model {
        let state = Self::initial_state(&def);
        let mut m = Model {
            def,
            state,
            views: Vec::new(),
            info: StepInfo::default(),
        };
        m.start();
        m
    }

    fn initial_state(def: &ModelDef) -> State {
        let main = ThreadPath::main();
        State {
            vars: def.var_inits.clone(),
            holders: vec![None; def.mutex_names.len()],
            threads: vec![ThreadState {
                tid: main.tid(),
                path: main,
                parent: Tid(0),
                def: def.main,
                pc: 0,
                regs: [0; NUM_REGS],
                children: 0,
                sends: 0,
                mailbox: VecDeque::new(),
                alive: true,
                crashed: false,
            }],
            status: Status::Running,
        }
    }

    /// Runs main's leading local instructions, as the host runs the test
    /// function up to its first scheduling point.
    fn start(&mut self) {
        let failure = self.settle(0).err();
        self.finish_step(failure);
    }

    /// The current value of a shared variable.
    pub fn value(&self, var: VarId) -> i64 {
        self.state.vars[var.0 as usize]
    }

    /// The registers of a thread (live or exited), if it exists.
    pub fn registers(&self, tid: Tid) -> Option<&[i64; NUM_REGS]> {
        self.state
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .map(|t| &t.regs)
    }

    /// Every thread created so far in this execution, exited ones included,
    /// in creation order.
    pub fn all_threads(&self) -> Vec<Tid> {
        self.state.threads.iter().map(|t| t.tid).collect()
    }

    fn index_of(&self, tid: Tid) -> Option<usize> {
        self.state.threads.iter().position(|t| t.tid == tid)
    }

    fn name_of(&self, tid: Tid) -> String {
        match self.index_of(tid) {
            Some(i) => self.state.threads[i].path.to_string(),
            None => format!("<no thread {:#018x}>", tid.0),
        }
    }

    fn eval(&self, i: usize, e: &Expr) -> i64 {
        let t = &self.state.threads[i];
        match e {
            Expr::Const(v) => *v,
            Expr::Reg(r) => t.regs[usize::from(*r)],
            Expr::SelfId => t.tid.0 as i64,
            Expr::ParentId => t.parent.0 as i64,
            Expr::Not(a) => i64::from(self.eval(i, a) == 0),
            Expr::Bin(op, a, b) => {
                let (x, y) = (self.eval(i, a), self.eval(i, b));
                match op {
                    BinOp::Add => x.wrapping_add(y),
                    BinOp::Sub => x.wrapping_sub(y),
                    BinOp::Mul => x.wrapping_mul(y),
                    BinOp::Eq => i64::from(x == y),
                    BinOp::Ne => i64::from(x != y),
                    BinOp::Lt => i64::from(x < y),
                    BinOp::Le => i64::from(x <= y),
                    BinOp::Gt => i64::from(x > y),
                    BinOp::Ge => i64::from(x >= y),
                    BinOp::And => i64::from(x != 0 && y != 0),
                    BinOp::Or => i64::from(x != 0 || y != 0),
                }
            }
        }
    }

    fn eval_tid(&self, i: usize, e: &Expr) -> Tid {
        Tid(self.eval(i, e) as u64)
    }

    fn alive(&self, tid: Tid) -> bool {
        self.state.threads.iter().any(|t| t.tid == tid && t.alive)
    }

    /// The operation thread `i` stops at, or `None` when its code has run out
    /// (its pending step is the exit).
    fn pending_op(&self, i: usize) -> Option<&Op> {
        let t = &self.state.threads[i];
        match self.def.defs[t.def.0 as usize].code.get(t.pc) {
            Some(Instr::Op(op)) => Some(op),
            Some(Instr::Local(_)) => {
                unreachable!("`settle` leaves threads only at operations or at the end")
            }
            None => None,
        }
    }

    fn pending(&self, i: usize) -> Pending {
        let t = &self.state.threads[i];
        let site = site(t.def, t.pc);
        let p = |op, enabled, accesses| Pending {
            op,
            enabled,
            alts: 1,
            accesses,
            site,
        };
        let Some(op) = self.pending_op(i) else {
            return p(
                OpKind::Exit,
                true,
                vec![Access::write(Oid::liveness(t.tid))],
            );
        };
        let d = &self.def;
        match op {
            Op::Read { var, .. } => p(
                OpKind::CellGet,
                true,
                vec![Access::read(d.var_oids[var.0 as usize])],
            ),
            Op::Write { var, .. } => p(
                OpKind::CellSet,
                true,
                vec![Access::write(d.var_oids[var.0 as usize])],
            ),
            Op::FetchAdd { var, .. } => p(
                OpKind::AtomicFetchAdd,
                true,
                vec![Access::write(d.var_oids[var.0 as usize])],
            ),
            Op::Lock(m) => p(
                OpKind::MutexLock,
                self.state.holders[m.0 as usize].is_none(),
                vec![Access::sync(d.mutex_oids[m.0 as usize])],
            ),
            Op::Unlock(m) => p(
                OpKind::MutexUnlock,
                true,
                vec![Access::sync(d.mutex_oids[m.0 as usize])],
            ),
            // Creating a thread writes its liveness: a join or send aimed at
            // the child's (predictable) id depends on whether it exists yet.
            Op::Spawn { .. } => {
                let child = t.path.child(t.children + 1).tid();
                p(
                    OpKind::Spawn,
                    true,
                    vec![Access::write(Oid::liveness(child))],
                )
            }
            Op::Join { target } => {
                let target = self.eval_tid(i, target);
                p(
                    OpKind::Join,
                    !self.alive(target),
                    vec![Access::sync(Oid::liveness(target))],
                )
            }
            Op::Send { to, .. } => p(
                OpKind::Send,
                true,
                vec![Access::write(Oid::mailbox(self.eval_tid(i, to)))],
            ),
            Op::Recv { .. } => p(
                OpKind::Recv,
                !t.mailbox.is_empty(),
                vec![Access::write(Oid::mailbox(t.tid))],
            ),
            Op::Choose { n, .. } => Pending {
                op: OpKind::Choose,
                enabled: true,
                alts: *n,
                accesses: vec![],
                site,
            },
            Op::Yield => p(OpKind::Yield, true, vec![]),
        }
    }

    /// Runs thread `i`'s local instructions up to its next operation (or the
    /// end of its code); a thread that fails on the way is marked crashed.
    fn settle(&mut self, i: usize) -> Result<(), Failure> {
        let r = self.run_locals(i);
        if r.is_err() {
            self.state.threads[i].crashed = true;
        }
        r
    }

    fn run_locals(&mut self, i: usize) -> Result<(), Failure> {
        let def = Arc::clone(&self.def);
        let t_def = &def.defs[self.state.threads[i].def.0 as usize];
        let mut fuel = FUEL_PER_STEP;
        loop {
            let pc = self.state.threads[i].pc;
            let Some(Instr::Local(local)) = t_def.code.get(pc) else {
                return Ok(());
            };
            if fuel == 0 {
                return Err(Failure::new(
                    FailureKind::FuelExhausted,
                    Some(self.state.threads[i].path.to_string()),
                    format!("{FUEL_PER_STEP} local instructions without a scheduling point (a loop with no operation?)"),
                ));
            }
            fuel -= 1;
            match local {
                Local::Set { dst, value } => {
                    let v = self.eval(i, value);
                    let t = &mut self.state.threads[i];
                    t.regs[usize::from(*dst)] = v;
                    t.pc += 1;
                }
                Local::JumpIf { cond, target } => {
                    let jump = self.eval(i, cond) != 0;
                    let t = &mut self.state.threads[i];
                    t.pc = if jump { *target } else { pc + 1 };
                }
                Local::Assert { cond, msg } => {
                    if self.eval(i, cond) == 0 {
                        let mut f = Failure::new(
                            FailureKind::Panic,
                            Some(self.state.threads[i].path.to_string()),
                            msg.clone(),
                        );
                        f.location = Some(format!("{}#{pc}", t_def.name));
                        return Err(f);
                    }
                    self.state.threads[i].pc += 1;
                }
            }
        }
    }

    /// Performs thread `i`'s pending operation with alternative `alt`,
    /// recording the threads it creates in `spawned` (even when the step then
    /// fails, e.g. on an assert at the start of the child).
    /// `message` receives the identity of the message a send sends or a
    /// receive takes.
    fn perform(
        &mut self,
        i: usize,
        alt: u32,
        spawned: &mut Vec<Tid>,
        message: &mut Option<(Tid, u32)>,
    ) -> Result<(), Failure> {
        let Some(op) = self.pending_op(i).cloned() else {
            let t = &mut self.state.threads[i];
            t.alive = false;
            // Messages to an exited thread are dropped; so are unread ones.
            t.mailbox.clear();
            return Ok(());
        };
        let me = self.state.threads[i].tid;
        let misuse = |msg: String| Failure::new(FailureKind::Misuse, Some(self.name_of(me)), msg);
        match &op {
            Op::Read { var, dst } => {
                let v = self.state.vars[var.0 as usize];
                self.state.threads[i].regs[usize::from(*dst)] = v;
            }
            Op::Write { var, value } => {
                self.state.vars[var.0 as usize] = self.eval(i, value);
            }
            Op::FetchAdd { var, delta, dst } => {
                let delta = self.eval(i, delta);
                let old = self.state.vars[var.0 as usize];
                self.state.vars[var.0 as usize] = old.wrapping_add(delta);
                self.state.threads[i].regs[usize::from(*dst)] = old;
            }
            Op::Lock(m) => self.state.holders[m.0 as usize] = Some(me),
            Op::Unlock(m) => {
                if self.state.holders[m.0 as usize] != Some(me) {
                    return Err(misuse(format!(
                        "unlocked mutex `{}`, which it does not hold",
                        self.def.mutex_names[m.0 as usize]
                    )));
                }
                self.state.holders[m.0 as usize] = None;
            }
            Op::Spawn { def, args, dst } => {
                let mut regs = [0; NUM_REGS];
                for (r, a) in regs.iter_mut().zip(args) {
                    *r = self.eval(i, a);
                }
                let parent = &mut self.state.threads[i];
                parent.children += 1;
                let path = parent.path.child(parent.children);
                let tid = path.tid();
                parent.regs[usize::from(*dst)] = tid.0 as i64;
                self.state.threads.push(ThreadState {
                    path,
                    tid,
                    parent: me,
                    def: *def,
                    pc: 0,
                    regs,
                    children: 0,
                    sends: 0,
                    mailbox: VecDeque::new(),
                    alive: true,
                    crashed: false,
                });
                spawned.push(tid);
                // The child runs up to its first operation now, so that its
                // pending operation is visible before it is first scheduled.
                let child = self.state.threads.len() - 1;
                self.settle(child)?;
            }
            Op::Join { target } => {
                let target = self.eval_tid(i, target);
                if self.index_of(target).is_none() {
                    return Err(misuse(format!(
                        "joined {:#018x}, which is not a thread",
                        target.0
                    )));
                }
            }
            Op::Send { to, value } => {
                let to = self.eval_tid(i, to);
                let value = self.eval(i, value);
                let Some(j) = self.index_of(to) else {
                    return Err(misuse(format!(
                        "sent to {:#018x}, which is not a thread",
                        to.0
                    )));
                };
                // Numbered even when dropped, as on the host.
                let seq = self.state.threads[i].sends;
                self.state.threads[i].sends += 1;
                *message = Some((me, seq));
                if self.state.threads[j].alive {
                    self.state.threads[j].mailbox.push_back(Message {
                        from: me,
                        seq,
                        value,
                    });
                }
            }
            Op::Recv { dst } => {
                let t = &mut self.state.threads[i];
                // Enabledness guarantees a message.
                let m = t.mailbox.pop_front();
                *message = m.as_ref().map(|m| (m.from, m.seq));
                t.regs[usize::from(*dst)] = m.map_or(0, |m| m.value);
            }
            Op::Choose { dst, .. } => {
                self.state.threads[i].regs[usize::from(*dst)] = i64::from(alt)
            }
            Op::Yield => {}
        }
        self.state.threads[i].pc += 1;
        self.settle(i)
    }

    /// Recomputes the views and the status after a step (or the start).
    fn finish_step(&mut self, failure: Option<Failure>) {
        self.views = (0..self.state.threads.len())
            .filter(|&i| self.state.threads[i].alive && !self.state.threads[i].crashed)
            .map(|i| ThreadView {
                tid: self.state.threads[i].tid,
                pending: self.pending(i),
            })
            .collect();
        self.state.status = if let Some(f) = failure {
            Status::Failed(f)
        } else if self.views.is_empty() {
            Status::Finished
        } else if self.views.iter().any(|v| v.pending.enabled) {
            Status::Running
        } else {
            let mut f = Failure::new(FailureKind::Deadlock, None, "every live thread is blocked");
            f.waiting = self
                .views
                .iter()
                .map(|v| Waiting {
                    thread: self.name_of(v.tid),
                    waits_for: self.waits_for(v.tid),
                })
                .collect();
            Status::Failed(f)
        };
    }

    fn waits_for(&self, tid: Tid) -> String {
        let Some(i) = self.index_of(tid) else {
            return String::new();
        };
        match self.pending_op(i) {
            Some(Op::Lock(m)) => {
                let name = &self.def.mutex_names[m.0 as usize];
                match self.state.holders[m.0 as usize] {
                    Some(h) => format!("mutex `{name}` held by `{}`", self.name_of(h)),
                    None => format!("mutex `{name}`"),
                }
            }
            Some(Op::Join { target }) => format!(
                "thread `{}` to exit",
                self.name_of(self.eval_tid(i, target))
            ),
            Some(Op::Recv { .. }) => "a message in its mailbox".to_string(),
            _ => String::new(),
        }
    }

    /// A canonical serialization of the state into a 256-bit hash: four
    /// SplitMix64 chains with different seeds over the same words. Not
    /// cryptographic, deterministic across runs and platforms.
    fn hash_state(&self) -> [u8; 32] {
        let mut h = StateHasher::new();
        let s = &self.state;
        h.word(s.vars.len() as u64);
        for v in &s.vars {
            h.word(*v as u64);
        }
        h.word(s.holders.len() as u64);
        for m in &s.holders {
            h.word(m.map_or(0, |t| t.0 ^ 1));
            h.word(u64::from(m.is_some()));
        }
        h.word(s.threads.len() as u64);
        for t in &s.threads {
            h.word(t.tid.0);
            h.word(t.parent.0);
            h.word(u64::from(t.def.0));
            h.word(t.pc as u64);
            for r in t.regs {
                h.word(r as u64);
            }
            h.word(u64::from(t.children));
            h.word(u64::from(t.alive) | u64::from(t.crashed) << 1);
            h.word(t.mailbox.len() as u64);
            for m in &t.mailbox {
                h.word(m.value as u64);
            }
        }
        match &s.status {
            Status::Running => h.word(0),
            Status::Finished => h.word(1),
            Status::Failed(f) => {
                h.word(2);
                h.bytes(f.kind.name().as_bytes());
                h.bytes(f.thread.as_deref().unwrap_or("").as_bytes());
                h.bytes(f.message.as_bytes());
            }
        }
        h.finish()
    }
}

/// See [`Model::hash_state`].
struct StateHasher {
    lanes: [u64; 4],
}

impl StateHasher {
    fn new() -> Self {
        StateHasher {
            lanes: [
                0x6d6f_6465_6c00_0001,
                0x6d6f_6465_6c00_0002,
                0x6d6f_6465_6c00_0003,
                0x6d6f_6465_6c00_0004,
            ],
        }
    }
    fn word(&mut self, w: u64) {
        for (k, lane) in self.lanes.iter_mut().enumerate() {
            *lane = mix64(lane.rotate_left(5 + 7 * k as u32) ^ w);
        }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        for chunk in b.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(w));
        }
    }
    fn finish(mut self) -> [u8; 32] {
        self.word(0x0065_6e64); // "end"
        let mut out = [0u8; 32];
        for (k, lane) in self.lanes.iter().enumerate() {
            out[8 * k..8 * k + 8].copy_from_slice(&lane.to_le_bytes());
        }
        out
    }
}

impl fmt::Display for Model {
    /// The shared state, for test failure messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, v) in self.def.var_names.iter().zip(&self.state.vars) {
            write!(f, "{name}={v} ")?;
        }
        write!(f, "status={:?}", self.state.status)
    }
}

impl Program for Model {
    type Snapshot = ModelSnapshot;
    type Error = ModelError;

    fn reset(&mut self) -> Result<(), ModelError> {
        self.state = Self::initial_state(&self.def);
        self.info = StepInfo::default();
        self.start();
        Ok(())
    }

    fn threads(&self) -> &[ThreadView] {
        &self.views
    }

    fn status(&self) -> &Status {
        &self.state.status
    }

    fn step(&mut self, d: Decision) -> Result<&StepInfo, ModelError> {
        if self.state.status != Status::Running {
            return Err(ModelError::NotRunning);
        }
        let Some(view) = self.views.iter().find(|v| v.tid == d.tid) else {
            return Err(ModelError::NotLive {
                thread: self.name_of(d.tid),
            });
        };
        let pending = view.pending.clone();
        if !pending.enabled {
            return Err(ModelError::Disabled {
                thread: self.name_of(d.tid),
                op: pending.op,
            });
        }
        if d.alt >= pending.alts {
            return Err(ModelError::NoSuchAlternative {
                thread: self.name_of(d.tid),
                op: pending.op,
                alt: d.alt,
                alts: pending.alts,
            });
        }
        let i = self.index_of(d.tid).unwrap_or_default();
        let mut spawned = Vec::new();
        let mut message = None;
        let failure = self.perform(i, d.alt, &mut spawned, &mut message).err();
        self.info = StepInfo {
            tid: d.tid,
            alt: d.alt,
            op: Some(pending.op),
            accesses: pending.accesses,
            site: pending.site,
            spawned,
            message,
            cost: 1,
            phase: None,
        };
        self.finish_step(failure);
        Ok(&self.info)
    }

    fn snapshot(&mut self) -> Result<Option<ModelSnapshot>, ModelError> {
        Ok(Some(ModelSnapshot(self.state.clone())))
    }

    fn restore(&mut self, s: &ModelSnapshot) -> Result<(), ModelError> {
        self.state = s.0.clone();
        // Views are a function of the state; recompute rather than store
        // them twice. The status is part of the state: keep it.
        let status = self.state.status.clone();
        self.finish_step(None);
        self.state.status = status;
        Ok(())
    }

    fn state_hash(&mut self) -> Option<[u8; 32]> {
        Some(self.hash_state())
    }

    fn thread_name(&self, tid: Tid) -> String {
        self.name_of(tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(m: &mut Model, tid: Tid) -> StepInfo {
        m.step(Decision::new(tid, 0)).unwrap().clone()
    }

    fn pending(m: &Model, tid: Tid) -> Pending {
        m.threads()
            .iter()
            .find(|t| t.tid == tid)
            .unwrap()
            .pending
            .clone()
    }

    fn main_tid() -> Tid {
        ThreadPath::main().tid()
    }

    #[test]
    fn threads_are_named_by_spawn_path_like_the_host() {
        let mut b = ModelBuilder::new();
        let leaf = b.thread("leaf", |_| {});
        let mid = b.thread("mid", |t| {
            t.spawn(leaf, 0);
        });
        b.main(|t| {
            t.spawn(mid, 0).spawn(mid, 1);
        });
        let mut m = b.build().unwrap();
        let main = ThreadPath::main();
        let s1 = run(&mut m, main.tid());
        assert_eq!(s1.spawned, vec![main.child(1).tid()]);
        assert_eq!(s1.op, Some(OpKind::Spawn));
        assert_eq!(
            s1.accesses,
            vec![Access::write(Oid::liveness(main.child(1).tid()))]
        );
        assert_eq!(s1.cost, 1);
        run(&mut m, main.tid());
        let s3 = run(&mut m, main.child(2).tid());
        assert_eq!(s3.spawned, vec![main.child(2).child(1).tid()]);
        let tids: Vec<Tid> = m.threads().iter().map(|t| t.tid).collect();
        let expected = [
            main.clone(),
            main.child(1),
            main.child(2),
            main.child(2).child(1),
        ];
        assert_eq!(tids, expected.iter().map(|p| p.tid()).collect::<Vec<_>>());
        assert_eq!(m.thread_name(main.child(2).child(1).tid()), "main.2.1");
        // Spawned ids land in the parent's registers.
        assert_eq!(
            m.registers(main.tid()).unwrap()[1],
            main.child(2).tid().0 as i64
        );
    }

    #[test]
    fn pending_operations_show_their_accesses_before_running() {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 5);
        let mx = b.mutex("m");
        let child = b.thread("child", |t| {
            t.recv(3);
        });
        b.main(|t| {
            t.read(x, 0)
                .set(1, reg(0) + 1)
                .write(x, reg(1))
                .lock(mx)
                .unlock(mx)
                .spawn(child, 2)
                .send(reg(2), 9)
                .join(reg(2));
        });
        let mut m = b.build().unwrap();
        let main = main_tid();
        let x_oid = Oid::object(main, 0);
        let m_oid = Oid::object(main, 1);
        let p = pending(&m, main);
        assert_eq!((p.op, p.enabled, p.alts), (OpKind::CellGet, true, 1));
        assert_eq!(p.accesses, vec![Access::read(x_oid)]);
        assert_ne!(p.site, 0);
        run(&mut m, main);
        // The local `set` ran as part of the read's step.
        assert_eq!(m.registers(main).unwrap()[..2], [5, 6]);
        assert_eq!(pending(&m, main).accesses, vec![Access::write(x_oid)]);
        run(&mut m, main);
        assert_eq!(m.value(x), 6);
        assert_eq!(pending(&m, main).accesses, vec![Access::sync(m_oid)]);
        run(&mut m, main);
        assert_eq!(pending(&m, main).op, OpKind::MutexUnlock);
        run(&mut m, main);
        run(&mut m, main); // spawn
        let c = ThreadPath::main().child(1).tid();
        let pc = pending(&m, c);
        assert_eq!((pc.op, pc.enabled), (OpKind::Recv, false));
        assert_eq!(pc.accesses, vec![Access::write(Oid::mailbox(c))]);
        assert_eq!(
            pending(&m, main).accesses,
            vec![Access::write(Oid::mailbox(c))]
        );
        run(&mut m, main); // send
        assert!(pending(&m, c).enabled);
        let pj = pending(&m, main);
        assert_eq!((pj.op, pj.enabled), (OpKind::Join, false));
        assert_eq!(pj.accesses, vec![Access::sync(Oid::liveness(c))]);
        run(&mut m, c);
        assert_eq!(m.registers(c).unwrap()[3], 9);
        let pe = pending(&m, c);
        assert_eq!((pe.op, pe.enabled), (OpKind::Exit, true));
        assert_eq!(pe.accesses, vec![Access::write(Oid::liveness(c))]);
        run(&mut m, c);
        assert!(pending(&m, main).enabled);
        run(&mut m, main);
        run(&mut m, main);
        assert_eq!(*m.status(), Status::Finished);
        assert!(m.threads().is_empty());
        assert_eq!(m.step(Decision::new(main, 0)), Err(ModelError::NotRunning));
    }

    #[test]
    fn locks_block_and_misuse_fails() {
        let mut b = ModelBuilder::new();
        let mx = b.mutex("m");
        let other = b.thread("other", |t| {
            t.lock(mx).unlock(mx);
        });
        b.main(|t| {
            t.lock(mx).spawn(other, 0).unlock(mx).unlock(mx);
        });
        let mut m = b.build().unwrap();
        let main = main_tid();
        let o = ThreadPath::main().child(1).tid();
        run(&mut m, main);
        run(&mut m, main);
        assert!(!pending(&m, o).enabled, "held by main");
        let err = m.step(Decision::new(o, 0)).unwrap_err();
        assert!(err.to_string().contains("`main.1` is not enabled"), "{err}");
        run(&mut m, main);
        assert!(pending(&m, o).enabled);
        run(&mut m, o);
        // main unlocks a mutex main.1 holds.
        run(&mut m, main);
        let Status::Failed(f) = m.status() else {
            panic!("{:?}", m.status())
        };
        assert_eq!(f.kind, FailureKind::Misuse);
        assert_eq!(f.thread.as_deref(), Some("main"));
        assert!(f.message.contains("`m`"), "{}", f.message);
    }

    #[test]
    fn deadlocks_list_every_waiting_thread() {
        let mut b = ModelBuilder::new();
        let a = b.mutex("a");
        let c = b.mutex("b");
        let t = b.thread("t", |t| {
            t.lock(c).lock(a);
        });
        b.main(|m| {
            m.lock(a).spawn(t, 0).lock(c);
        });
        let mut m = b.build().unwrap();
        let main = main_tid();
        let t1 = ThreadPath::main().child(1).tid();
        run(&mut m, main);
        run(&mut m, main);
        run(&mut m, t1);
        let f = m.status_failure();
        assert_eq!(f.kind, FailureKind::Deadlock);
        assert_eq!(
            f.waiting,
            vec![
                Waiting {
                    thread: "main".into(),
                    waits_for: "mutex `b` held by `main.1`".into()
                },
                Waiting {
                    thread: "main.1".into(),
                    waits_for: "mutex `a` held by `main`".into()
                },
            ]
        );
    }

    impl Model {
        fn status_failure(&self) -> &Failure {
            match &self.state.status {
                Status::Failed(f) => f,
                s => panic!("not failed: {s:?}"),
            }
        }
    }

    #[test]
    fn a_write_seen_by_a_reader_fails_its_assert() {
        // x = 0; T1: x = 1; T2: if x == 1 { assert false }
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let t1 = b.thread("t1", |t| {
            t.write(x, 1);
        });
        let t2 = b.thread("t2", |t| {
            t.read(x, 0).when(reg(0).equals(1), |t| {
                t.fail("saw x == 1");
            });
        });
        b.main(|t| {
            t.spawn(t1, 0).spawn(t2, 1);
        });
        let model = b.build().unwrap();
        let main = main_tid();
        let (p1, p2) = (
            ThreadPath::main().child(1).tid(),
            ThreadPath::main().child(2).tid(),
        );
        // T2 reads first: no failure.
        let mut m = model.clone();
        for t in [main, main, p2, p1, p2, p1, main] {
            run(&mut m, t);
        }
        assert_eq!(*m.status(), Status::Finished);
        // T1 writes first: T2's read step fails.
        let mut m = model.clone();
        for t in [main, main, p1, p2] {
            run(&mut m, t);
        }
        let f = m.status_failure();
        assert_eq!(
            (f.kind, f.thread.as_deref(), f.message.as_str()),
            (FailureKind::Panic, Some("main.2"), "saw x == 1")
        );
        assert_eq!(f.location.as_deref(), Some("t2#2"));
        // The failed thread has no pending operation any more.
        assert!(m.threads().iter().all(|t| t.tid != p2));
    }

    #[test]
    fn loops_without_operations_run_out_of_fuel() {
        let mut b = ModelBuilder::new();
        b.main(|t| {
            t.label("top").set(0, reg(0) + 1).jump("top");
        });
        let m = b.build().unwrap();
        let Status::Failed(f) = m.status() else {
            panic!()
        };
        assert_eq!(f.kind, FailureKind::FuelExhausted);
    }

    #[test]
    fn labels_and_loops() {
        // Count to 3 in a loop of writes: 3 writes, then exit.
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        b.main(|t| {
            t.label("top")
                .set(0, reg(0) + 1)
                .write(x, reg(0))
                .jump_if(reg(0).lt(3), "top");
        });
        let mut m = b.build().unwrap();
        let mut steps = 0;
        while *m.status() == Status::Running {
            run(&mut m, main_tid());
            steps += 1;
        }
        assert_eq!((steps, m.value(x)), (4, 3));
    }

    #[test]
    fn build_errors_are_reported() {
        let err = |f: fn(&mut ModelBuilder)| {
            let mut b = ModelBuilder::new();
            f(&mut b);
            b.build().unwrap_err()
        };
        assert_eq!(err(|_| {}), BuildError::NoMain);
        assert!(matches!(
            err(|b| {
                b.main(|t| {
                    t.jump("nowhere");
                });
            }),
            BuildError::UnknownLabel { label, .. } if label == "nowhere"
        ));
        assert!(matches!(
            err(|b| {
                b.main(|t| {
                    t.label("a").label("a");
                });
            }),
            BuildError::DuplicateLabel { .. }
        ));
        assert!(matches!(
            err(|b| {
                b.main(|t| {
                    t.set(16, 0);
                });
            }),
            BuildError::BadRegister { reg: 16, .. }
        ));
        assert!(matches!(
            err(|b| {
                b.main(|t| {
                    t.choose(0, 0);
                });
            }),
            BuildError::ChooseZero { .. }
        ));
        let e = err(|b| {
            let d = b.declare("later");
            b.main(|t| {
                t.spawn(d, 0);
            });
        });
        assert_eq!(
            e.to_string(),
            "thread definition `later` was declared but never defined"
        );
    }

    #[test]
    fn messages_to_exited_threads_are_dropped_and_unknown_ids_are_misuse() {
        let mut b = ModelBuilder::new();
        let quiet = b.thread("quiet", |_| {});
        b.main(|t| {
            t.spawn(quiet, 0)
                .join(reg(0))
                .send(reg(0), 1)
                .send(lit(12345), 1);
        });
        let mut m = b.build().unwrap();
        let main = main_tid();
        let q = ThreadPath::main().child(1).tid();
        run(&mut m, main);
        run(&mut m, q);
        run(&mut m, main);
        run(&mut m, main);
        assert_eq!(*m.status(), Status::Running);
        run(&mut m, main);
        assert_eq!(m.status_failure().kind, FailureKind::Misuse);
    }

    #[test]
    fn choose_offers_its_alternatives() {
        let mut b = ModelBuilder::new();
        b.main(|t| {
            t.choose(4, 7);
        });
        let mut m = b.build().unwrap();
        assert_eq!(pending(&m, main_tid()).alts, 4);
        let err = m.step(Decision::new(main_tid(), 4)).unwrap_err();
        assert!(matches!(
            err,
            ModelError::NoSuchAlternative {
                alt: 4,
                alts: 4,
                ..
            }
        ));
        m.step(Decision::new(main_tid(), 3)).unwrap();
        assert_eq!(m.registers(main_tid()).unwrap()[7], 3);
    }

    #[test]
    fn snapshots_restore_the_exact_future() {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let w = b.thread("w", |t| {
            t.fetch_add(x, 1, 0).send(parent_id(), reg(0));
        });
        b.main(|t| {
            t.spawn(w, 0).spawn(w, 1).recv(2).recv(3);
        });
        let mut m = b.build().unwrap();
        let main = main_tid();
        run(&mut m, main);
        run(&mut m, main);
        let snap = m.snapshot().unwrap().unwrap();
        let hash = m.state_hash();
        let order = [
            ThreadPath::main().child(2).tid(),
            ThreadPath::main().child(1).tid(),
        ];
        let play = |m: &mut Model| {
            let mut infos = Vec::new();
            for _ in 0..2 {
                for t in order {
                    infos.push(run(m, t));
                }
            }
            while *m.status() == Status::Running {
                let t = m.threads().iter().find(|t| t.pending.enabled).unwrap().tid;
                infos.push(run(m, t));
            }
            (infos, m.state_hash(), m.value(x))
        };
        let first = play(&mut m);
        assert_eq!(first.2, 2);
        m.restore(&snap).unwrap();
        assert_eq!(m.state_hash(), hash);
        assert_eq!(play(&mut m), first);
        assert_eq!(
            m.registers(main).unwrap()[2..4],
            [0, 1],
            "main.2 incremented first"
        );
    }

    #[test]
    fn state_hash_identifies_states_not_paths() {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        let y = b.var("y", 0);
        let tx = b.thread("tx", |t| {
            t.write(x, 1);
        });
        let ty = b.thread("ty", |t| {
            t.write(y, 1);
        });
        b.main(|t| {
            t.spawn(tx, 0).spawn(ty, 1);
        });
        let model = b.build().unwrap();
        let main = main_tid();
        let (a, c) = (
            ThreadPath::main().child(1).tid(),
            ThreadPath::main().child(2).tid(),
        );
        let reach = |order: &[Tid]| {
            let mut m = model.clone();
            for &t in order {
                run(&mut m, t);
            }
            m.state_hash().unwrap()
        };
        // Independent writes commute: same state, same hash.
        assert_eq!(reach(&[main, main, a, c]), reach(&[main, main, c, a]));
        assert_ne!(reach(&[main, main, a]), reach(&[main, main, c]));
        assert_ne!(reach(&[main, main]), reach(&[main, main, a]));
        let mut m = model.clone();
        assert_eq!(m.state_hash(), m.clone().state_hash());
        m.reset().unwrap();
        assert_eq!(m.state_hash().unwrap(), reach(&[]));
    }
}
