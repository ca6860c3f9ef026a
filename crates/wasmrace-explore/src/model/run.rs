//! Running models: [`Model`], the [`Program`] implementation, with the
//! state of one execution (threads, registers, variables, mailboxes), its
//! snapshots and its state hash.

use super::*;

/// One thread of a running model, exited ones included (their liveness
/// matters to joins and their names to traces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ThreadState {
    pub(crate) path: ThreadPath,
    pub(crate) tid: Tid,
    pub(crate) parent: Tid,
    pub(crate) def: DefId,
    /// Index of the next instruction; `code.len()` means "exit is pending".
    pub(crate) pc: usize,
    pub(crate) regs: [i64; NUM_REGS],
    /// Threads spawned so far (the next child is `path.child(children + 1)`).
    pub(crate) children: u32,
    /// Messages sent so far (the next send's index), as on the host.
    pub(crate) sends: u32,
    pub(crate) mailbox: VecDeque<Message>,
    pub(crate) alive: bool,
    /// The thread failed (an assert, running out of fuel) in the middle of
    /// its local instructions; it has no pending operation any more.
    pub(crate) crashed: bool,
}

/// A message in a mailbox: its value, and its identity (sender, index of the
/// send among the sender's sends) reported in `StepInfo::message` by the send
/// and by the receive that takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Message {
    pub(crate) from: Tid,
    pub(crate) seq: u32,
    pub(crate) value: i64,
}

/// Everything that changes while a model runs; snapshots are clones of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) vars: Vec<i64>,
    pub(crate) holders: Vec<Option<Tid>>,
    /// In creation order.
    pub(crate) threads: Vec<ThreadState>,
    pub(crate) status: Status,
}

/// A snapshot of a [`Model`]: a copy of its whole state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSnapshot(State);

/// A runnable model; see the module documentation. Cloning is cheap for the
/// definitions (shared) and copies the state.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) def: Arc<ModelDef>,
    pub(crate) state: State,
    /// Live threads and their pending operations, derived from `state`.
    pub(crate) views: Vec<ThreadView>,
    pub(crate) info: StepInfo,
    /// Whether `step_on` offers steps (see there); off to compare with
    /// plain stepping.
    pub(crate) offers: bool,
}

pub(crate) fn site(def: DefId, pc: usize) -> u64 {
    // Never 0 (which means "unknown site"), stable across executions.
    ((u64::from(def.0) + 1) << 32) | pc as u64
}

impl Model {
    pub(crate) fn new(def: Arc<ModelDef>) -> Model {
        let state = Self::initial_state(&def);
        let mut m = Model {
            def,
            state,
            views: Vec::new(),
            info: StepInfo::default(),
            offers: true,
        };
        m.start();
        m
    }

    /// The same model, stepped one decision at a time only (`step_on`
    /// never offers): what going on in place must not change.
    #[cfg(test)]
    pub(crate) fn stepping_only(mut self) -> Model {
        self.offers = false;
        self
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
pub(crate) struct StateHasher {
    pub(crate) lanes: [u64; 4],
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

    /// Offers every step whose thread is still live to `onward`, so that
    /// the explorer's side of going on in place is exercised by every
    /// model test.
    fn step_on(&mut self, d: Decision, onward: &mut OnwardFn<'_>) -> Result<&StepInfo, ModelError> {
        let mut d = d;
        loop {
            self.step(d)?;
            let live = self.views.iter().any(|v| v.tid == d.tid);
            if self.state.status != Status::Running || !live || !self.offers {
                return Ok(&self.info);
            }
            match onward(&self.info, &self.views, d.tid) {
                Onward::Take(next) => d = next,
                Onward::Stop | Onward::Pause => return Ok(&self.info),
            }
        }
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
