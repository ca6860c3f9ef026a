//! Running one segment of a thread: from its pending hook (or its entry)
//! to its next hook call, or to its end. One path for both ways a module
//! is stepped (ARCHITECTURE.md, "How a step works"): through the
//! trampolines the instrumentation added (the operation comes back in the
//! trampoline's result) or, for modules without them, through the
//! exports with Asyncify driven from the host (the linked hook recorded
//! the operation). Only entering the thread and learning where it stopped
//! differ.

use super::WasmProgram;
use crate::error::{runtime, HostError};
use crate::hooks::{
    Asyncify, EnterRet, GuestFault, Mode, ASYNCIFY_NORMAL, ASYNCIFY_REWINDING, ASYNCIFY_UNWINDING,
};
use crate::ops::decode_op;
use crate::ops::Op;
use crate::world::{Entry, Ret};
use wasmrace_explore::Status;
use wasmrace_trace::{Failure, FailureKind};
use wasmtime::{Trap, Val};

/// The thread a segment runs, as it was before the segment.
#[derive(Clone, Copy)]
struct Segment {
    i: usize,
    entry: Entry,
    started: bool,
    sp: u32,
    low: u32,
    slot: u32,
    /// The thread's Asyncify buffer and its end.
    buf: u32,
    end: u32,
}

/// Where a thread's segment stopped, as the way it was entered tells.
enum Stop {
    /// Back from the trampoline: the stack pointer, its low-water mark and
    /// the record of the hook it stopped at (hook -1: the entry returned).
    Trampoline(wasmtime::Result<EnterRet>),
    /// Back from the export: a linked hook recorded the operation and
    /// started the unwind (or the entry returned, or it trapped).
    Export(wasmtime::Result<()>),
}

impl WasmProgram {
    /// Runs thread `i` from its pending hook (or its entry) to its next hook
    /// call, or to its end. `resume` is the value its pending hook returns.
    pub(super) fn run_segment(&mut self, i: usize, resume: Option<Ret>) -> Result<(), HostError> {
        let fuel = self.guest.config.step_fuel();
        self.store.set_fuel(fuel).map_err(runtime)?;
        let st = self.store.data_mut();
        let t = &mut st.world.threads[i];
        let buf = st.world.slot_bases[t.slot as usize];
        let seg = Segment {
            i,
            entry: t.entry,
            started: t.started,
            sp: t.sp,
            low: t.low,
            slot: t.slot,
            buf,
            end: buf + st.asyncify_bytes,
        };
        t.started = true;
        st.cur = i;
        let tls = t.tls;
        if let Some(g) = &self.ex.tls {
            g.set(&mut self.store, Val::I32(tls as i32))
                .map_err(runtime)?;
        }
        let stop = if self.ex.enter.is_some() {
            match self.enter_trampoline(&seg, resume)? {
                Some(stop) => stop,
                // Failed before entering (an `out` pointer outside memory).
                None => return Ok(()),
            }
        } else {
            self.enter_export(&seg, resume)?
        };
        if let Some(g) = &self.ex.tls {
            let tls = g.get(&mut self.store).i32().unwrap_or(0) as u32;
            self.store.data_mut().world.threads[i].tls = tls;
        }
        let left = self.store.get_fuel().unwrap_or(0);
        // A step ended in its next hook call (`onward`) counted its cost.
        if !self.progress.ended {
            self.progress.info.cost += fuel.saturating_sub(left);
        }
        let (sp, low) = self.stack_after(&stop);
        self.store.data_mut().world.note_low(i, low);
        // Checked before anything else: a trap or a misuse after an
        // overflow is a consequence of the overflow, and no other thread
        // may run on a stack the overflow wrote into.
        if self.overflowed(&seg, low) {
            return self.fail_stack_overflow(&seg, &stop);
        }
        let r = match stop {
            Stop::Trampoline(r) => match r {
                Ok((_, hook, site, a0, a1, a2, a3)) => {
                    if hook >= 0 && self.progress.ended {
                        // Recorded by `onward`, which ended the step.
                        self.store.data_mut().mode = Mode::Unwinding;
                    } else if hook >= 0 && !self.record_stop(i, hook, site, [a0, a1, a2, a3]) {
                        return Ok(());
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Stop::Export(r) => {
                if r.is_ok() && !self.end_host_unwind(&seg)? {
                    return Ok(());
                }
                r
            }
        };
        self.finish_segment(i, seg.entry, seg.slot, sp, r)
    }

    /// Enters thread `seg` through its trampoline: the stack pointer, its
    /// low-water mark and Asyncify's globals travel as arguments and the
    /// result instead of through wasmtime's `Global` API. `None` when the
    /// execution failed before entering.
    fn enter_trampoline(
        &mut self,
        seg: &Segment,
        resume: Option<Ret>,
    ) -> Result<Option<Stop>, HostError> {
        // The hook wrapper ends the rewind and returns `val` without
        // calling the host, so the host sees the thread running from the
        // start; an `out` value is written now, which is the same to the
        // guest: nothing runs between here and the hook's return.
        self.store.data_mut().mode = Mode::Running;
        let (state, val) = if seg.started {
            let r = resume.unwrap_or_default();
            if let Some((addr, v)) = r.out {
                let map = self.store.data().dirty_map;
                let mem = self.ex.memory.data_mut(&mut self.store);
                if let Err(message) =
                    crate::world::put_guest_bytes(mem, map, addr, &v.to_le_bytes())
                {
                    self.fail_misuse(seg.i, message);
                    return Ok(None);
                }
            }
            (ASYNCIFY_REWINDING, r.val)
        } else {
            (ASYNCIFY_NORMAL, 0)
        };
        let starts_thread = matches!(seg.entry, Entry::ThreadStart(_));
        if starts_thread
            && self
                .ex
                .enter
                .as_ref()
                .is_some_and(|e| e.thread_start.is_none())
        {
            return Err(self.no_thread_start());
        }
        let (sp, low, buf, end) = (
            seg.sp as i32,
            seg.low as i32,
            seg.buf as i32,
            seg.end as i32,
        );
        let offer = self.reach_progress(seg.started);
        let enter = self.ex.enter.as_ref().expect("entered by trampoline");
        let (f, arg) = match seg.entry {
            Entry::Test => (&enter.test, 0),
            Entry::ThreadStart(arg) => (
                enter.thread_start.as_ref().expect("checked above"),
                arg as i32,
            ),
        };
        let r = f.call(
            &mut self.store,
            (arg, sp, low, state, buf, end, val, i32::from(offer)),
        );
        self.unreach_progress();
        Ok(Some(Stop::Trampoline(r)))
    }

    /// Enters thread `seg` through its export, setting the stack pointer,
    /// its mark and Asyncify's rewind from the host; the linked hook
    /// (`hooks::suspend`) hands the resumed hook its result.
    fn enter_export(&mut self, seg: &Segment, resume: Option<Ret>) -> Result<Stop, HostError> {
        self.ex
            .sp
            .set(&mut self.store, Val::I32(seg.sp as i32))
            .map_err(runtime)?;
        if let Some(low) = &self.ex.stack_low {
            low.set(&mut self.store, Val::I32(seg.low as i32))
                .map_err(runtime)?;
        }
        let st = self.store.data_mut();
        if seg.started {
            st.resume = resume.unwrap_or_default();
            st.mode = Mode::Rewinding;
            self.ex
                .asyncify
                .start_rewind(&mut self.store, seg.buf)
                .map_err(runtime)?;
        } else {
            st.mode = Mode::Running;
        }
        let r = match seg.entry {
            Entry::Test => self.ex.test.call(&mut self.store, ()),
            Entry::ThreadStart(arg) => match &self.ex.thread_start {
                Some(f) => f.call(&mut self.store, arg as i32),
                None => return Err(self.no_thread_start()),
            },
        };
        Ok(Stop::Export(r))
    }

    /// The stack pointer after a segment and its low-water mark (`None`
    /// when the module does not track it).
    fn stack_after(&mut self, stop: &Stop) -> (u32, Option<u32>) {
        let tracked = self.ex.stack_low.is_some();
        match stop {
            Stop::Trampoline(Ok((v, ..))) => {
                ((*v as u64 >> 32) as u32, tracked.then_some(*v as u32))
            }
            // A trap skipped the trampoline's return, or the export was
            // entered: read the globals (the low-water mark must cover
            // whatever the thread wrote).
            _ => {
                let low = self
                    .ex
                    .stack_low
                    .map(|g| g.get(&mut self.store).i32().unwrap_or(0) as u32);
                let sp = self.ex.sp.get(&mut self.store).i32().unwrap_or(0) as u32;
                (sp, low)
            }
        }
    }

    /// Records the operation a trampoline's record names as thread `i`'s
    /// pending one; false when that failed the execution (a bad pointer).
    fn record_stop(&mut self, i: usize, hook: i32, site: i32, args: [i64; 4]) -> bool {
        let mem = self.ex.memory.data(&self.store);
        match decode_op(hook as usize, args, mem) {
            Ok(op) => {
                let st = self.store.data_mut();
                st.world.set_pending(i, op, site as u32);
                st.mode = Mode::Unwinding;
                true
            }
            Err(message) => {
                self.fail_misuse(i, message);
                false
            }
        }
    }

    /// After an export returned: stops the unwind a hook started, and
    /// checks the thread's stack fit its Asyncify buffer (Asyncify itself
    /// does not; the trampolines check in wasm). False when it did not,
    /// which failed the execution.
    fn end_host_unwind(&mut self, seg: &Segment) -> Result<bool, HostError> {
        if self.store.data().mode != Mode::Unwinding {
            return Ok(true);
        }
        self.ex
            .asyncify
            .stop_unwind(&mut self.store)
            .map_err(runtime)?;
        let (buf, end) = (seg.buf as usize, seg.end as usize);
        let data = self.ex.memory.data(&self.store);
        let current = data
            .get(buf..buf + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        if current > end {
            let name = self.store.data().world.thread_label(seg.i);
            self.store.data_mut().mode = Mode::Idle;
            self.progress.status = Status::Failed(self.asyncify_overflow(Some(name)));
            return Ok(false);
        }
        Ok(true)
    }

    fn no_thread_start(&self) -> HostError {
        HostError::NoThreadStart {
            name: self.guest.name.clone(),
        }
    }

    /// What `run_segment` does once the thread is back in the host: record
    /// where it stopped, or its end, or its failure.
    fn finish_segment(
        &mut self,
        i: usize,
        entry: Entry,
        slot: u32,
        sp: u32,
        r: wasmtime::Result<()>,
    ) -> Result<(), HostError> {
        match r {
            Ok(()) => match self.store.data().mode {
                Mode::Unwinding => {
                    let st = self.store.data_mut();
                    st.mode = Mode::Idle;
                    st.world.threads[i].sp = sp;
                    // Without a low-water mark (untracked modules), the
                    // stack pointer where the thread stopped is all there
                    // is to check.
                    // A std guest's threads run on stacks of their own.
                    if !matches!(entry, Entry::Test) && !st.world.process {
                        let bottom = st.world.slot_bases[slot as usize] + st.asyncify_bytes;
                        if sp < bottom {
                            let f = self.stack_overflow_failure(i);
                            self.progress.status = Status::Failed(f);
                        }
                    }
                }
                Mode::Running => {
                    // The entry function returned: the thread's next step is its exit.
                    let st = self.store.data_mut();
                    st.mode = Mode::Idle;
                    // A std guest's main returning ends its process.
                    let ends = st.world.process && matches!(entry, Entry::Test);
                    let t = &mut st.world.threads[i];
                    t.pending = if ends {
                        Op::ProcExit { code: 0 }
                    } else {
                        Op::Exit
                    };
                    t.site = 0;
                }
                Mode::Rewinding | Mode::Idle => {
                    return Err(HostError::Runtime {
                        message: "a resumed thread returned without reaching its hook (instrumentation mismatch)".into(),
                    });
                }
            },
            Err(e) => {
                let f = self.classify(i, e);
                self.store.data_mut().mode = Mode::Idle;
                self.progress.status = Status::Failed(f);
            }
        }
        Ok(())
    }

    /// Whether spawned thread `seg` went below the bottom of its shadow
    /// stack during the segment, by its low-water mark `low` (the lowest
    /// stack pointer any of its frames set; `None` when the module does not
    /// track it). The main thread keeps the module's own stack, below which
    /// a Rust module has no memory: it traps instead.
    fn overflowed(&self, seg: &Segment, low: Option<u32>) -> bool {
        let std_guest = self.store.data().world.process;
        match (seg.entry, low) {
            (Entry::ThreadStart(_), Some(low)) if !std_guest => {
                low < seg.buf + self.store.data().asyncify_bytes
            }
            _ => false,
        }
    }

    /// Fails the execution with thread `seg`'s stack overflow, whatever
    /// else the segment ended with, and leaves the instance between steps.
    /// The overflow wrote below the thread's stack, into pages the
    /// known-zero bookkeeping of other slots may count as never written:
    /// no slot's pages count as known zero any more.
    fn fail_stack_overflow(&mut self, seg: &Segment, stop: &Stop) -> Result<(), HostError> {
        if matches!(stop, Stop::Export(Ok(()))) && self.store.data().mode == Mode::Unwinding {
            self.ex
                .asyncify
                .stop_unwind(&mut self.store)
                .map_err(runtime)?;
        }
        let st = self.store.data_mut();
        st.mode = Mode::Idle;
        for low in &mut st.world.slot_lows {
            *low = 0;
        }
        if let Some(t) = st.world.threads.get_mut(seg.i) {
            t.panic = None;
        }
        self.progress.status = Status::Failed(self.stack_overflow_failure(seg.i));
        Ok(())
    }

    /// The failure of thread `i` running below the bottom of its stack.
    fn stack_overflow_failure(&self, i: usize) -> Failure {
        let name = self.store.data().world.thread_label(i);
        Failure::new(
            FailureKind::StackOverflow,
            Some(name),
            format!(
                "the thread ran past the bottom of its `{}` KiB shadow stack (into memory that is not its own) between two scheduling points; raise --thread-stack-kib",
                self.guest.config.thread_stack_bytes >> 10
            ),
        )
    }

    /// Fails the execution: thread `i` misused a hook (a pointer outside
    /// memory), which the host found outside any hook call.
    fn fail_misuse(&mut self, i: usize, message: String) {
        let st = self.store.data_mut();
        st.mode = Mode::Idle;
        let name = st.world.thread_label(i);
        self.progress.status =
            Status::Failed(Failure::new(FailureKind::Misuse, Some(name), message));
    }

    /// The failure of a thread whose suspended stack overflowed its
    /// Asyncify buffer. The overflow wrote into stack pages that
    /// `known_zero` would take for zero, possibly in later slots too: no
    /// slot's pages count as known zero any more, so the next restore
    /// looks at them all.
    fn asyncify_overflow(&mut self, thread: Option<String>) -> Failure {
        for low in &mut self.store.data_mut().world.slot_lows {
            *low = 0;
        }
        let bytes = self.guest.config.asyncify_buffer_bytes;
        Failure::new(
            FailureKind::Trap,
            thread,
            format!(
                "the suspended call stack did not fit the {} Asyncify buffer; raise --asyncify-buffer-kib",
                if bytes >= 1024 {
                    format!("`{}` KiB", bytes >> 10)
                } else {
                    format!("`{bytes}`-byte")
                }
            ),
        )
    }

    /// Turns a trap of thread `i` into a failure report.
    pub(super) fn classify(&mut self, i: usize, e: wasmtime::Error) -> Failure {
        // With trampolines the wasm hook wrapper starts an unwind without
        // the host knowing: Asyncify's state says.
        let unwinding = self.store.data().mode == Mode::Unwinding
            || match &self.ex.asyncify {
                Asyncify::Globals { state, .. } => {
                    state.get(&mut self.store).i32() == Some(ASYNCIFY_UNWINDING)
                }
                Asyncify::Funcs { .. } => false,
            };
        let st = self.store.data_mut();
        let thread = (i < st.world.threads.len()).then(|| st.world.thread_label(i));
        if let Some(GuestFault(f)) = e.downcast_ref::<GuestFault>() {
            let mut f = f.clone();
            f.thread = thread;
            return f;
        }
        if st.limits.hit {
            st.limits.hit = false;
            return self.memory_failure(thread);
        }
        if let Some((message, location)) = st.world.threads.get_mut(i).and_then(|t| t.panic.take())
        {
            let mut f = Failure::new(FailureKind::Panic, thread, message);
            f.hint = crate::hints::panic_hint(&f.message, &location);
            f.location = Some(location);
            return f;
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => Failure::new(
                FailureKind::FuelExhausted,
                thread,
                format!(
                    "one step ran `{}` instructions without reaching a scheduling point (a loop with no hook call?); raise --fuel-per-step{}",
                    self.guest.config.fuel_per_step,
                    crate::config::fuel_note(&self.guest.config)
                ),
            ),
            Some(Trap::UnreachableCodeReached) if unwinding => self.asyncify_overflow(thread),
            // wasmtime's own text already reads `wasm trap: ...`.
            Some(t) => {
                let mut f = Failure::new(FailureKind::Trap, thread, t.to_string());
                // With the SDK's panic hook installed (`__wasmrace_init`),
                // a panic would have been reported: an `unreachable` without
                // one is an abort.
                let aborted = *t == Trap::UnreachableCodeReached && self.ex.init.is_some();
                f.hint = crate::hints::trap_hint(&e, aborted);
                f
            }
            None => Failure::new(FailureKind::Trap, thread, crate::error::one_line(&format!("{e:#}"))),
        }
    }
}
