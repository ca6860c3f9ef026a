//! Building models: [`ModelBuilder`] declares variables, mutexes and
//! thread definitions; [`ThreadBuilder`] writes a thread's instructions,
//! resolved into jump targets when the model is built.

use super::*;

/// Builds a [`Model`]. Objects and thread definitions are declared first;
/// errors in thread code (bad registers, unknown labels) are collected and
/// reported by [`build`](ModelBuilder::build).
#[derive(Default)]
pub struct ModelBuilder {
    pub(crate) objects: u32,
    pub(crate) var_names: Vec<String>,
    pub(crate) var_inits: Vec<i64>,
    pub(crate) var_oids: Vec<Oid>,
    pub(crate) mutex_names: Vec<String>,
    pub(crate) mutex_oids: Vec<Oid>,
    pub(crate) defs: Vec<(String, Option<Vec<Built>>)>,
    pub(crate) main: Option<DefId>,
    pub(crate) errors: Vec<BuildError>,
}

impl ModelBuilder {
    /// An empty model: no variables, mutexes or threads yet.
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

    /// Checks the definitions and builds the model; the first problem
    /// found is the error.
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
pub(crate) enum Built {
    Instr(Instr<String>),
    Label(String),
}

/// Turns labels into instruction indices.
pub(crate) fn resolve(thread: &str, code: Vec<Built>) -> Result<Vec<Instr<usize>>, BuildError> {
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
    pub(crate) name: String,
    pub(crate) code: Vec<Built>,
    pub(crate) errors: Vec<BuildError>,
    pub(crate) auto_labels: u32,
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

    /// Spawns a thread running each of `defs`, in order, the `i`-th one's
    /// id going to register `i`.
    pub fn spawn_each(&mut self, defs: &[DefId]) -> &mut Self {
        for (i, def) in defs.iter().enumerate() {
            let dst = Reg::try_from(i).unwrap_or(Reg::MAX);
            self.spawn(*def, dst);
        }
        self
    }

    /// Waits for the threads whose ids are in registers `0..n` (as
    /// [`spawn_each`](Self::spawn_each) leaves them), in order.
    pub fn join_each(&mut self, n: usize) -> &mut Self {
        for i in 0..n {
            let r = Reg::try_from(i).unwrap_or(Reg::MAX);
            self.join(super::reg(r));
        }
        self
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
