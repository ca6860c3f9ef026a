//! Quiescent stepping of a wasm guest: one thread runs at a time, from one
//! hook call to the next, and between steps no wasm frame is live, so linear
//! memory + globals + the `World` are the whole state. Implements the
//! explore crate's `Program`, with exact snapshots and state hashes. The
//! rooms: `segment` (running a thread to its next hook), `views` (the
//! thread views kept up after each step), `instance` (instantiation, thread
//! slots, known-zero pages), `dirty` (snapshots and restores through the
//! dirty-page map), `hash` (the state hash, incremental through the map);
//! snapshots are here, with the step.

mod dirty;
mod hash;
mod instance;
mod libtest;
mod onward;
mod segment;

pub(crate) use dirty::dirty_map_bytes;
pub(crate) use instance::FIRST_SLOT_BATCH;

use crate::error::{runtime, HostError};
use crate::guest::{Guest, GuestInner};
use crate::hooks::races::RaceLog;
use crate::hooks::{Exports, HostState, Mode};
use crate::ops::Op;
use crate::progress::Progress;
use crate::snapshot::{self, Snapshot};
use crate::world::{GuestMem, Outcome, Target};
use instance::instantiate;
use std::collections::BTreeMap;
use std::sync::Arc;
use wasmrace_explore::{is_preemption, OnwardFn, Program, Status, StepInfo, ThreadView};
use wasmrace_trace::{Decision, ObjectValue, OpKind, Tid, TraceEvent};
use wasmtime::Store;

/// What a traced step leaves for its trace record, gathered while it runs.
struct Traced {
    step: u64,
    tid: Tid,
    kind: OpKind,
    site: u32,
    preemption: bool,
    object: Option<String>,
    detail: String,
}

/// One test of a guest, run one scheduling decision at a time.
pub struct WasmProgram {
    guest: Arc<GuestInner>,
    test: String,
    store: Store<HostState>,
    ex: Arc<Exports>,
    progress: Progress,
    trace: Vec<TraceEvent>,
    /// Bytes of object states (`TraceEvent::state`) the trace may still
    /// keep: `--max-log-kib` again, a budget of its own, so that a long
    /// traced execution cannot exhaust memory describing objects.
    state_room: u64,
    sites: BTreeMap<u32, Option<String>>,
    /// The page list of the last snapshot or restore: memory equals it but
    /// for the pages the dirty-page map marks since, when `synced`.
    reference: Arc<snapshot::PageTable>,
    synced: bool,
    /// The dirty-page map, when the module is tracked and it is placed.
    map: Option<dirty::DirtyMap>,
    /// Pages marked since the last synchronisation (scratch), and marked
    /// pages above the guest's size a snapshot left for the next restore.
    dirty: Vec<u32>,
    carry: Vec<u32>,
    /// Each page's cached digest for the state hash (`hash`): pages past
    /// the end are stale.
    digests: Vec<hash::PageDigest>,
    /// Pages the last restore wrote through the map (`None`: full scan).
    restored_pages: Option<usize>,
    /// The state right after `start` on the current instance: `reset`
    /// restores it (microseconds) instead of instantiating afresh (tens of
    /// microseconds) while memory has not grown past it.
    initial: Option<Snapshot>,
    /// Instances made so far (1 + fresh instances for resets and restores).
    instances: u64,
    /// Some execution so far reached a hook before the test returned.
    scheduling_point: bool,
    /// Some execution so far spawned a thread.
    spawned: bool,
    /// Whether `step_on` may go on in place (`onward`); off to compare.
    in_place: bool,
    /// Under `--data-races report`, the races of every execution so far,
    /// taken from the store after each step (an instance made again
    /// starts with a store of its own).
    races: RaceLog,
}

impl std::fmt::Debug for WasmProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmProgram")
            .field("test", &self.test)
            .field("steps", &self.progress.steps)
            .finish()
    }
}

// Here rather than in guest.rs so that dependencies point one way:
// program -> guest, never back.
impl Guest {
    /// A program that runs test `test`, ready for exploration.
    pub fn program(&self, test: &str) -> Result<WasmProgram, HostError> {
        if !self.tests().iter().any(|t| t == test) {
            return Err(HostError::UnknownTest {
                name: self.inner.name.clone(),
                test: test.into(),
                available: format!("`{}`", self.tests().join("`, `")),
            });
        }
        WasmProgram::new(self.inner.clone(), test)
    }
}

impl WasmProgram {
    pub(crate) fn new(guest: Arc<GuestInner>, test: &str) -> Result<WasmProgram, HostError> {
        let race_limit = guest.config.max_data_race_reports;
        let (store, ex) = instantiate(&guest, test, false)?;
        let mut p = WasmProgram {
            guest,
            test: test.into(),
            store,
            ex,
            progress: Progress::default(),
            trace: Vec::new(),
            state_room: 0,
            sites: BTreeMap::new(),
            reference: Arc::default(),
            synced: false,
            map: None,
            dirty: Vec::new(),
            carry: Vec::new(),
            digests: Vec::new(),
            restored_pages: None,
            initial: None,
            instances: 1,
            scheduling_point: false,
            spawned: false,
            in_place: true,
            races: RaceLog::new(race_limit),
        };
        p.place_dirty_map()?;
        p.start()?;
        p.initial = p.snapshot()?;
        Ok(p)
    }

    /// A program of `test` that records a trace from its start.
    pub(crate) fn new_traced(guest: Arc<GuestInner>, test: &str) -> Result<WasmProgram, HostError> {
        let mut p = WasmProgram::new(guest, test)?;
        p.set_tracing(true);
        p.reset()?;
        Ok(p)
    }

    /// Every log line of the current (traced) execution so far: what the
    /// guest logged, or wrote to standard output and error.
    pub(crate) fn logs(&self) -> Vec<String> {
        let traced = self.trace.iter().flat_map(|e| e.logs.iter());
        traced.chain(&self.store.data().logs).cloned().collect()
    }

    /// The test this program runs.
    pub fn test(&self) -> &str {
        &self.test
    }

    /// Record a readable trace of the following steps (slower: names and
    /// values are formatted, sites resolved, logs kept).
    pub fn set_tracing(&mut self, on: bool) {
        self.store.data_mut().tracing = on;
    }

    /// The trace recorded so far in the current execution (empty unless
    /// tracing is on).
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    /// Takes the trace recorded so far, leaving it empty.
    pub fn take_trace(&mut self) -> Vec<TraceEvent> {
        std::mem::take(&mut self.trace)
    }

    /// Steps taken in the current execution.
    pub fn steps(&self) -> u64 {
        self.progress.steps
    }

    /// Whether the test reached a scheduling point (a suspending hook)
    /// before returning, in any execution of this program so far.
    pub fn reached_a_scheduling_point(&self) -> bool {
        self.scheduling_point
    }

    /// Whether any execution of this program so far spawned a thread.
    pub fn spawned_a_thread(&self) -> bool {
        self.spawned
    }

    /// Runs the threads the last step spawned up to their first hook; the
    /// list goes back empty with its buffer kept for the next spawn.
    fn start_spawned(&mut self) -> Result<(), HostError> {
        let mut unstarted = std::mem::take(&mut self.store.data_mut().world.unstarted);
        for &c in &unstarted {
            if matches!(self.progress.status, Status::Failed(_)) {
                break;
            }
            self.run_segment(c, None)?;
        }
        // A first segment ends at the child's first hook, before any spawn
        // of its own, so the list is still empty here.
        let w = &mut self.store.data_mut().world;
        if w.unstarted.is_empty() {
            unstarted.clear();
            w.unstarted = unstarted;
        }
        Ok(())
    }

    fn tracing(&self) -> bool {
        self.store.data().tracing
    }

    /// Starts an execution on the current (fresh) instance: the main thread
    /// runs up to its first hook.
    fn start(&mut self) -> Result<(), HostError> {
        let sp = self.ex.sp.get(&mut self.store).i32().unwrap_or(0) as u32;
        let slot = match self.alloc_slot()? {
            Ok(s) => s,
            Err(f) => {
                self.progress.status = Status::Failed(f);
                return Ok(());
            }
        };
        self.store.data_mut().world.add_main(slot, sp);
        self.store.data_mut().world.process = self.guest.analysis.std.is_some();
        self.progress.status = Status::Running;
        self.progress.steps = 0;
        self.progress.last = None;
        self.trace.clear();
        self.state_room = self.guest.config.max_log_bytes;
        self.store.data_mut().log_room = self.guest.config.max_log_bytes;
        if let Some(init) = self.ex.init.clone() {
            self.store.data_mut().mode = Mode::Running;
            self.store
                .set_fuel(self.guest.config.step_fuel())
                .map_err(runtime)?;
            let r = init.call(&mut self.store, ());
            self.store.data_mut().mode = Mode::Idle;
            // Init ran on the main stack: its writes count toward main's mark.
            if let Some(low) = self.ex.stack_low {
                let l = low.get(&mut self.store).i32().unwrap_or(0) as u32;
                let main = &mut self.store.data_mut().world.threads[0];
                main.low = main.low.min(l);
            }
            if let Err(e) = r {
                let f = self.classify(0, e);
                self.progress.status = Status::Failed(f);
                self.progress.refresh(&self.store.data().world);
                return Ok(());
            }
        }
        self.run_segment(0, None)?;
        // Deterministic, so the first start answers for every execution.
        if matches!(self.progress.status, Status::Running) {
            let first = &self.store.data().world.threads[0].pending;
            self.scheduling_point |= !matches!(first, Op::Exit | Op::ProcExit { .. });
        }
        if self.tracing() {
            let logs = std::mem::take(&mut self.store.data_mut().logs);
            if !logs.is_empty() {
                self.trace.push(TraceEvent {
                    step: 0,
                    thread: "main".into(),
                    op: "start".into(),
                    object: None,
                    detail: String::new(),
                    site: None,
                    preemption: false,
                    logs,
                    state: Vec::new(),
                    state_cut: false,
                });
            }
        }
        self.progress.refresh(&self.store.data().world);
        Ok(())
    }

    /// What an access's object is, for reports: `cell main#0` for a host
    /// object; ids derived from other things (a table key, a mailbox, a
    /// registry name) are described by what they identify when a live
    /// thread or object explains them, else shown as an id.
    pub fn describe_object(&self, obj: wasmrace_trace::Oid) -> String {
        let w = &self.store.data().world;
        if w.objects.contains_key(&obj.0) {
            return w.object_name(obj.0);
        }
        for (i, t) in w.threads.iter().enumerate() {
            if wasmrace_trace::Oid::mailbox(t.tid) == obj {
                return format!("mailbox {}", w.thread_label(i));
            }
            if wasmrace_trace::Oid::liveness(t.tid) == obj {
                return format!("thread {}", w.thread_label(i));
            }
        }
        format!("object {:#018x}", obj.0)
    }

    /// `file:line:col` of a guest call site (`Pending::site`,
    /// `StepInfo::site`), when the guest exports the site accessors.
    pub fn describe_site(&mut self, site: u64) -> Option<String> {
        self.site_name(u32::try_from(site).ok()?)
    }

    fn site_name(&mut self, site: u32) -> Option<String> {
        if site == 0 {
            return None;
        }
        if let Some(s) = self.sites.get(&site) {
            return s.clone();
        }
        // A std guest's site is the code offset of its atomic instruction:
        // the function it is in.
        if let Some(std) = &self.guest.analysis.std {
            if let Some(line) = std.lines.get(&site) {
                return Some(line.clone());
            }
            return std.function_at(site).map(|f| format!("in {f}"));
        }
        let resolved = self
            .ex
            .site
            .clone()
            .and_then(|[file_ptr, file_len, line, col]| {
                let s = site as i32;
                let fp = file_ptr.call(&mut self.store, s).ok()? as u32 as usize;
                let fl = file_len.call(&mut self.store, s).ok()? as u32 as usize;
                let line = line.call(&mut self.store, s).ok()?;
                let col = col.call(&mut self.store, s).ok()?;
                let file = self.ex.memory.data(&self.store).get(fp..fp + fl)?.to_vec();
                Some(format!("{}:{line}:{col}", String::from_utf8_lossy(&file)))
            });
        self.sites.insert(site, resolved.clone());
        resolved
    }

    /// The index of the thread `d` runs, if `d` is a decision the program
    /// can take now.
    #[inline]
    fn decided_thread(&self, d: Decision) -> Result<usize, HostError> {
        let w = &self.store.data().world;
        let invalid = |thread| HostError::InvalidDecision {
            thread,
            alt: d.alt,
            step: self.progress.steps,
        };
        let Some(i) = w.thread_index(d.tid) else {
            return Err(invalid(format!("{:#x}", d.tid.0)));
        };
        if !matches!(self.progress.status, Status::Running) || !w.enabled(i) || d.alt >= w.alts(i) {
            return Err(invalid(w.thread_name(d.tid)));
        }
        Ok(i)
    }

    fn do_step(&mut self, d: Decision) -> Result<(), HostError> {
        let step_no = self.progress.steps;
        let i = self.decided_thread(d)?;
        let tracing = self.tracing();
        let preemption = tracing && is_preemption(&self.progress.views, self.progress.last, d.tid);
        let (kind, site, spawn_arg) = self.progress.begin(&self.store.data().world, i, d);
        let spawned = match spawn_arg {
            Some(arg) => self.spawn_child(i, arg)?,
            None => None,
        };
        let mut object = None;
        let mut detail = String::new();
        // What the step touches, resolved before (a removed table key, an
        // unregistered name) and after it (a new key): only when tracing.
        let mut targets = Vec::new();
        let describe = tracing && self.state_room > 0;
        let mut made = 0;
        if describe && !matches!(self.progress.status, Status::Failed(_)) {
            let w = &self.store.data().world;
            made = w.threads[i].objects;
            let mut pending = Vec::new();
            w.accesses(i, &mut pending);
            w.targets(&pending, &mut targets);
        }
        if !matches!(self.progress.status, Status::Failed(_)) {
            let (bytes, st) = self.ex.memory.data_and_store_mut(&mut self.store);
            let dirty = st.dirty_map;
            let w = &mut st.world;
            let mem = GuestMem { bytes, dirty };
            let ex = self.progress.execute(w, i, d, spawned, tracing, mem);
            object = ex.object;
            detail = ex.detail;
            if describe {
                w.targets(&self.progress.info.accesses, &mut targets);
                w.made_since(i, made, &mut targets);
            }
            match ex.outcome {
                Outcome::Return(r) => self.run_segment(i, Some(r))?,
                Outcome::Continue => {}
                Outcome::Exited => {
                    let w = &mut self.store.data_mut().world;
                    let slot = w.threads[i].slot;
                    w.free_slots.push(slot);
                }
                Outcome::Fail(f) => self.progress.status = Status::Failed(f),
            }
        } else {
            self.progress.info.accesses.clear();
        }
        if std::mem::take(&mut self.progress.ended) {
            // Ended inside the thread's next hook call, which went on in
            // place (`onward`): its record is the last step's, done.
            return Ok(());
        }
        // Newly spawned threads run up to their first hook within this step:
        // that code only touches their own state.
        if !self.store.data().world.unstarted.is_empty() {
            self.start_spawned()?;
        }
        // One comparison per step bounds everything the guest makes the
        // host hold (`World::held`).
        if self.store.data().world.held > self.guest.config.max_host_bytes
            && !matches!(self.progress.status, Status::Failed(_))
        {
            let name = self.store.data().world.thread_label(i);
            self.progress.status = Status::Failed(self.host_memory_failure(Some(name)));
        }
        if tracing {
            let step = Traced {
                step: step_no,
                tid: d.tid,
                kind,
                site,
                preemption,
                object,
                detail,
            };
            self.record(step, targets);
        }
        self.progress.end(&self.store.data().world, i);
        // The test suite checks every incremental update against a full
        // recomputation.
        #[cfg(feature = "verify-views")]
        if let Err(e) = self.verify_views() {
            panic!("after step {step_no} ({}): {e}", kind.name());
        }
        Ok(())
    }

    /// Makes the thread a spawn by thread `i` starts (with `arg`), in a
    /// fresh stack slot; `None` when no slot is left, which failed the
    /// execution.
    fn spawn_child(&mut self, i: usize, arg: u32) -> Result<Option<Tid>, HostError> {
        self.spawned = true;
        if self.ex.thread_start.is_none() {
            return Err(HostError::NoThreadStart {
                name: self.guest.name.clone(),
            });
        }
        match self.alloc_slot()? {
            Ok(slot) => {
                let top = self.slot_stack_top(slot);
                let w = &mut self.store.data_mut().world;
                let c = w.spawn_child(i, arg, slot, top);
                let tid = w.threads[c].tid;
                self.progress.info.spawned.push(tid);
                Ok(Some(tid))
            }
            Err(mut f) => {
                f.thread = Some(self.store.data().world.thread_label(i));
                self.progress.status = Status::Failed(f);
                Ok(None)
            }
        }
    }

    /// Appends a traced step to the trace, with its logs and the state of
    /// the objects it touched.
    fn record(&mut self, t: Traced, targets: Vec<Target>) {
        let logs = std::mem::take(&mut self.store.data_mut().logs);
        let site = self.site_name(t.site);
        let thread = self.store.data().world.thread_name(t.tid);
        let (state, state_cut) = self.object_states(targets);
        self.trace.push(TraceEvent {
            step: t.step as u32 + 1,
            thread,
            op: t.kind.name().into(),
            object: t.object,
            detail: t.detail,
            site,
            preemption: t.preemption,
            logs,
            state,
            state_cut,
        });
    }

    /// The state after a step of the objects it touched (`targets`, in
    /// order of first mention), while the budget lasts; the second value
    /// is true on the step that spends it, whose states are left out as
    /// are all later steps'.
    fn object_states(&mut self, targets: Vec<Target>) -> (Vec<ObjectValue>, bool) {
        // Per description beyond its text: the record and the vector slot.
        const OVERHEAD: usize = 64;
        if self.state_room == 0 {
            return (Vec::new(), false);
        }
        let w = &self.store.data().world;
        let mut seen: Vec<&Target> = Vec::with_capacity(targets.len());
        let mut state = Vec::with_capacity(targets.len());
        for t in &targets {
            if !seen.contains(&t) {
                seen.push(t);
                state.extend(w.describe_target(t));
            }
        }
        let bytes: usize = state
            .iter()
            .map(|v: &ObjectValue| v.object.len() + v.value.len() + OVERHEAD)
            .sum();
        match self.state_room.checked_sub(bytes as u64) {
            Some(left) => {
                self.state_room = left;
                (state, false)
            }
            None => {
                self.state_room = 0;
                (Vec::new(), true)
            }
        }
    }

    /// Replaces the instance with a fresh one (needed when memory must
    /// shrink, which wasm memories cannot).
    fn reinstantiate(&mut self) -> Result<(), HostError> {
        let tracing = self.tracing();
        let (store, ex) = instantiate(&self.guest, &self.test, tracing)?;
        self.store = store;
        self.ex = ex;
        self.instances += 1;
        self.carry.clear();
        self.place_dirty_map()
    }
}

impl WasmProgram {
    /// Restores `s`'s memory by looking at every page the guest has now or
    /// had then; above both, memory is zero already. Pages beyond the
    /// snapshot's size become zero (the guest's later growth must find
    /// them as fresh memory is).
    fn restore_fully(&mut self, s: &Snapshot) {
        self.begin_full_sync();
        let len = self.mem_len().max(s.memory_bytes);
        // Pages zero both now and in the snapshot need no look at all.
        let pages = len / snapshot::PAGE;
        let zero_now = self.known_zero(&self.store.data().world, pages);
        let zero_then = self.known_zero(&s.world, pages);
        let both: Vec<bool> = zero_now
            .iter()
            .zip(&zero_then)
            .map(|(a, b)| *a && *b)
            .collect();
        let data = &mut self.ex.memory.data_mut(&mut self.store)[..len];
        snapshot::restore_pages(data, &s.pages, &both);
        self.end_full_sync(&s.pages, len, true);
    }
}

impl WasmProgram {
    /// Moves the races the last step reported into the program's log.
    fn keep_races(&mut self) {
        if let Some(log) = self.store.data_mut().race_log.as_mut() {
            self.races.absorb(log);
        }
    }

    /// The races of every execution so far (`--data-races report`),
    /// leaving the log empty.
    pub(crate) fn take_races(&mut self) -> RaceLog {
        let empty = RaceLog::new(self.guest.config.max_data_race_reports);
        std::mem::replace(&mut self.races, empty)
    }
}

impl Program for WasmProgram {
    type Snapshot = Snapshot;
    type Error = HostError;

    fn reset(&mut self) -> Result<(), HostError> {
        // Restoring the start state is exact (the same as starting again)
        // and cheap, but memory cannot shrink: once an execution grew it,
        // start over on a fresh instance and remember that start instead.
        // A traced run starts afresh: the start's own logs belong in the trace.
        let size = self.ex.memory.data_size(&self.store);
        let rewinds_size = self.ex.pages.is_some();
        if let Some(initial) = self.initial.take().filter(|_| !self.tracing()) {
            if (rewinds_size || initial.memory_bytes == size)
                && matches!(initial.status, Status::Running)
            {
                let r = self.restore(&initial);
                self.initial = Some(initial);
                return r;
            }
        }
        self.reinstantiate()?;
        self.start()?;
        self.initial = self.snapshot()?;
        Ok(())
    }

    fn threads(&self) -> &[ThreadView] {
        &self.progress.views
    }

    fn status(&self) -> &Status {
        &self.progress.status
    }

    fn step(&mut self, d: Decision) -> Result<&StepInfo, HostError> {
        self.do_step(d)?;
        self.keep_races();
        Ok(&self.progress.info)
    }

    fn step_on(&mut self, d: Decision, onward: &mut OnwardFn<'_>) -> Result<&StepInfo, HostError> {
        self.step_in_place(d, onward)?;
        self.keep_races();
        Ok(&self.progress.info)
    }

    fn snapshot(&mut self) -> Result<Option<Snapshot>, HostError> {
        if !self.guest.analysis.state_is_whole() {
            // A snapshot without the tables or a reference global would
            // not restore exactly.
            return Ok(None);
        }
        let memory_bytes = self.mem_len();
        let pages = match self.capture_dirty(memory_bytes) {
            Some(pages) => pages,
            None => {
                self.begin_full_sync();
                let zero = self.known_zero(&self.store.data().world, memory_bytes / snapshot::PAGE);
                let data = &self.ex.memory.data(&self.store)[..memory_bytes];
                let pages = Arc::new(snapshot::capture_pages(data, &self.reference, &zero));
                self.end_full_sync(&pages, memory_bytes, false);
                pages
            }
        };
        let mut globals = Vec::with_capacity(self.ex.globals.len());
        for (g, _) in &self.ex.globals {
            globals.push(snapshot::val_bits(&g.get(&mut self.store)));
        }
        Ok(Some(Snapshot {
            memory_bytes,
            pages,
            globals,
            world: self.store.data().world.clone(),
            views: self.progress.views.clone(),
            status: self.progress.status.clone(),
            steps: self.progress.steps,
            last: self.progress.last,
        }))
    }

    fn restore(&mut self, s: &Snapshot) -> Result<(), HostError> {
        let size = self.ex.memory.data_size(&self.store);
        if size > s.memory_bytes && self.ex.pages.is_none() {
            self.reinstantiate()?;
        }
        let size = self.ex.memory.data_size(&self.store);
        if size < s.memory_bytes {
            let pages = ((s.memory_bytes - size) / 65536) as u64;
            self.ex
                .memory
                .grow(&mut self.store, pages)
                .map_err(runtime)?;
        }
        if !self.restore_dirty(&s.pages) {
            self.restore_fully(s);
        }
        for ((g, ty), bits) in self.ex.globals.iter().zip(&s.globals) {
            let v = snapshot::val_from_bits(ty, *bits);
            g.set(&mut self.store, v).map_err(runtime)?;
        }
        let st = self.store.data_mut();
        st.world.assign_from(&s.world);
        st.mode = Mode::Idle;
        st.logs.clear();
        st.log_room = self.guest.config.max_log_bytes;
        // Keeps the views' buffer, as `assign_from` keeps the world's.
        self.progress.views.clone_from(&s.views);
        self.progress.status = s.status.clone();
        self.progress.steps = s.steps;
        self.progress.last = s.last;
        self.trace.clear();
        self.state_room = self.guest.config.max_log_bytes;
        Ok(())
    }

    /// Everything a saved snapshot keeps alive: its page data (pages shared
    /// with other snapshots counted in full, to stay on the safe side), its
    /// page table, globals, `World` clone and views.
    fn snapshot_bytes(&self, s: &Snapshot) -> usize {
        use std::mem::size_of;
        let views: usize = s
            .views
            .iter()
            .map(|v| v.pending.accesses.capacity() * size_of::<wasmrace_trace::Access>())
            .sum::<usize>()
            + s.views.capacity() * size_of::<ThreadView>();
        s.stored_bytes()
            + s.pages.table_bytes()
            + s.globals.capacity() * size_of::<u128>()
            + s.world.heap_bytes()
            + views
            + size_of::<Snapshot>()
    }

    fn state_hash(&mut self) -> Option<[u8; 32]> {
        if !self.guest.analysis.state_is_whole() {
            // Two states differing in a table or a reference global would
            // hash alike, and a state cache would prune one for the other.
            return None;
        }
        let mut h = blake3::Hasher::new();
        // The guest's memory only: the same state hashes the same whatever
        // the real memory grew to in other executions. Only the pages
        // changed since the last hash are read again.
        self.hash_memory_cached(&mut h);
        self.hash_rest(&mut h);
        Some(*h.finalize().as_bytes())
    }

    fn thread_name(&self, tid: Tid) -> String {
        self.store.data().world.thread_name(tid)
    }
}

impl WasmProgram {
    /// Whether steps go through the module's trampolines and hook wrappers
    /// (`load::add_trampolines`) rather than the host-side Asyncify
    /// bookkeeping. For tests.
    #[doc(hidden)]
    pub fn uses_trampolines(&self) -> bool {
        self.ex.enter.is_some()
    }

    /// The instance's real memory size in bytes: the guest's own size
    /// plus the room it was instantiated with or grew into
    /// (`load::headroom`). For tests.
    #[doc(hidden)]
    pub fn real_memory_bytes(&self) -> usize {
        self.ex.memory.data_size(&self.store)
    }

    /// How many wasm instances this program has made: resets and restores
    /// normally reuse the instance. For tests and benchmarks.
    #[doc(hidden)]
    pub fn instances(&self) -> u64 {
        self.instances
    }

    /// Checks that the views and status kept up by `refresh_after` are what
    /// a full recomputation gives. For tests.
    #[doc(hidden)]
    pub fn verify_views(&mut self) -> Result<(), String> {
        self.progress.verify(&self.store.data().world)
    }
}
