//! Going on in place (`Program::step_on`): when the explorer decides the
//! next step for the thread that just reached a hook, the thread takes it
//! inside that hook call, instead of unwinding to the host and being
//! rewound. The hook wrappers (`load::trampolines`) call `__onward` before
//! they would unwind; it ends the step under way as the host would after
//! the unwind (the same `Progress` code), offers it to the explorer, and
//! runs the decided operation, handing its result back to the wrapper,
//! which returns it to the guest. Whatever the host must do outside wasm
//! (start spawned threads, record a trace, fail on the stack or the host
//! memory bound) makes `__onward` decline before it changes anything, and
//! the step ends in the host as before. A step ended here has nothing left
//! for the host; an operation decided here but not runnable here (a spawn)
//! is taken next by `step_on`.
//!
//! The explorer's callback and the program's `Progress` are reached by raw
//! pointers set for the duration of one call into wasm (see [`Onward`]).

use super::progress::Progress;
use super::WasmProgram;
use crate::error::HostError;
use crate::hooks::HostState;
use crate::ops::{decode_op, Op};
use crate::world::{put_guest_bytes, Entry, GuestMem, Outcome};
use wasmrace_explore::{Onward as Answer, OnwardFn, Status, StepInfo};
use wasmrace_trace::{Decision, Failure, FailureKind};
use wasmtime::Caller;

/// What `__onward` reaches while `step_on` takes a step: the explorer's
/// callback, and, during the call into wasm that runs the decided thread,
/// the program's `Progress`. Both are raw pointers, set by the program
/// around that call and cleared after it.
pub(crate) struct Onward {
    callback: *mut OnwardFn<'static>,
    progress: *mut Progress,
    memory: wasmtime::Memory,
    fuel: u64,
    max_host_bytes: u64,
    tracks_low: bool,
}

// SAFETY: an `Onward` lives in the store data only while the thread that
// set it runs a step (`step_on`); its pointers are dereferenced only inside
// hook calls that step makes, on that thread.
unsafe impl Send for Onward {}

/// The wrapper's answer: go on with this result (1), or unwind (0).
type Go = (i32, i64);

const UNWIND: Go = (0, 0);

impl WasmProgram {
    /// `Program::step_on`: `do_step`, with the explorer's callback where
    /// `__onward` finds it, then any decision deferred to the host.
    pub(super) fn step_in_place(
        &mut self,
        d: Decision,
        onward: &mut OnwardFn<'_>,
    ) -> Result<&StepInfo, HostError> {
        if !self.in_place || self.ex.enter.is_none() || self.store.data().tracing {
            self.do_step(d)?;
            return Ok(&self.progress.info);
        }
        // SAFETY: only the lifetime is erased; the pointer is cleared below,
        // before `onward` goes out of scope, and used only in between.
        let callback: *mut OnwardFn<'static> = unsafe { std::mem::transmute(onward) };
        let config = &self.guest.config;
        self.store.data_mut().onward = Some(Onward {
            callback,
            progress: std::ptr::null_mut(),
            memory: self.ex.memory,
            fuel: config.step_fuel(),
            max_host_bytes: config.max_host_bytes,
            tracks_low: self.ex.stack_low.is_some(),
        });
        let mut d = d;
        // Caught so that the callback's pointer is cleared however the step
        // ends: a strategy's panic inside a hook call comes out here.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
            self.do_step(d)?;
            match self.progress.deferred.take() {
                Some(next) => d = next,
                None => return Ok::<(), HostError>(()),
            }
        }));
        self.store.data_mut().onward = None;
        let r = r.unwrap_or_else(|panic| {
            // The thread stopped where no trampoline marked what Asyncify
            // wrote (the rewind's buffer header): the next restore must
            // look at every page, not only the marked ones. Nor is there a
            // step under way any more.
            self.synced = false;
            (self.progress.ended, self.progress.deferred) = (false, None);
            std::panic::resume_unwind(panic)
        });
        r?;
        Ok(&self.progress.info)
    }

    /// Whether `Program::step_on` goes on in place (the default) or steps
    /// one decision at a time. For tests: the two must explore alike.
    #[doc(hidden)]
    pub fn go_on_in_place(&mut self, on: bool) {
        self.in_place = on;
    }

    /// Lets `__onward` reach the progress during the call into wasm about
    /// to run a step's thread (`resumed`: not a thread's first segment,
    /// which belongs to the step that spawned it). Whether the hook
    /// wrappers are to offer the host to go on in place at all.
    pub(super) fn reach_progress(&mut self, resumed: bool) -> bool {
        let p: *mut Progress = &mut self.progress;
        match self.store.data_mut().onward.as_mut() {
            Some(o) if resumed => {
                o.progress = p;
                true
            }
            _ => false,
        }
    }

    /// After that call: out of reach again.
    pub(super) fn unreach_progress(&mut self) {
        if let Some(o) = self.store.data_mut().onward.as_mut() {
            o.progress = std::ptr::null_mut();
        }
    }
}

/// `wasmrace.__onward(hook, site, a0, a1, a2, a3, low) -> (go, result)`,
/// called by a suspending hook's wrapper with the operation it would
/// record: see the module documentation.
pub(crate) fn onward(
    mut c: Caller<'_, HostState>,
    hook: i32,
    site: i32,
    args: [i64; 4],
    low: i32,
) -> wasmtime::Result<Go> {
    let Some(o) = c.data().onward.as_ref().filter(|o| !o.progress.is_null()) else {
        return Ok(UNWIND);
    };
    let (callback, progress, memory, fuel) = (o.callback, o.progress, o.memory, o.fuel);
    let (max_host_bytes, low) = (o.max_host_bytes, o.tracks_low.then_some(low as u32));
    let left = c.get_fuel()?;
    // SAFETY: set by `reach_progress` from the program's `&mut self`
    // right before the call into wasm this hook call is part of; the
    // program touches only the store meanwhile.
    let p = unsafe { &mut *progress };
    let (mem, st) = memory.data_and_store_mut(&mut c);
    let i = st.cur;
    let Some(op) = ready(st, mem, hook, args, low, max_host_bytes) else {
        return Ok(UNWIND);
    };
    // The step ends here, as `run_segment` and `do_step` end it.
    p.info.cost += fuel.saturating_sub(left);
    st.world.note_low(i, low);
    st.world.set_pending(i, op, site as u32);
    p.end(&st.world, i);
    p.ended = true;
    verify(p, st);
    loop {
        if !matches!(p.status, Status::Running) {
            return Ok(UNWIND);
        }
        let tid = st.world.threads[i].tid;
        // SAFETY: set by `step_on` from the callback it was given, which
        // outlives the call into wasm this hook call is part of.
        let answer = unsafe { (*callback)(&p.info, &p.views, tid) };
        let Answer::Take(d) = answer else {
            return Ok(UNWIND);
        };
        if !runs_here(st, i, d) {
            p.deferred = Some(d);
            return Ok(UNWIND);
        }
        p.begin(&st.world, i, d);
        let dirty = st.dirty_map;
        let gm = GuestMem {
            bytes: &mut *mem,
            dirty,
        };
        let ex = p.execute(&mut st.world, i, d, None, false, gm);
        let failure = match ex.outcome {
            Outcome::Return(r) => {
                let out = r
                    .out
                    .map(|(addr, v)| put_guest_bytes(mem, st.dirty_map, addr, &v.to_le_bytes()));
                match out {
                    Some(Err(message)) => {
                        let name = st.world.thread_label(i);
                        Failure::new(FailureKind::Misuse, Some(name), message)
                    }
                    _ => {
                        c.set_fuel(fuel)?;
                        return Ok((1, r.val));
                    }
                }
            }
            // Waits at the same hook for its next operation: a step of its
            // own, ended here too.
            Outcome::Continue => {
                p.end(&st.world, i);
                p.ended = true;
                verify(p, st);
                continue;
            }
            Outcome::Fail(f) => f,
            Outcome::Exited => unreachable!("an exit is never pending at a hook (`runs_here`)"),
        };
        p.status = Status::Failed(failure);
        p.end(&st.world, i);
        p.ended = true;
        return Ok(UNWIND);
    }
}

/// The operation the thread suspends on, if its step can end here: else
/// the host ends it after the unwind (a trace is recorded, spawned threads
/// start, the stack or the host memory bound fails the execution, or the
/// arguments are misuse).
fn ready(
    st: &HostState,
    mem: &[u8],
    hook: i32,
    args: [i64; 4],
    low: Option<u32>,
    max_host_bytes: u64,
) -> Option<Op> {
    let w = &st.world;
    if st.tracing || !w.unstarted.is_empty() {
        return None;
    }
    let t = &w.threads[st.cur];
    // A std guest's threads run on stacks of their own (`pthread_create`'s),
    // not in their slots.
    if let (Entry::ThreadStart(_), Some(low), false) = (t.entry, low, w.process) {
        if low < w.slot_bases[t.slot as usize] + st.asyncify_bytes {
            return None;
        }
    }
    let op = decode_op(hook as usize, args, mem).ok()?;
    (w.held + op.heap_bytes() as u64 <= max_host_bytes).then_some(op)
}

/// Whether thread `i` can take `d` inside its hook call: `d` is its own
/// and enabled, and not a spawn (the host starts the new thread) or an
/// exit.
fn runs_here(st: &HostState, i: usize, d: Decision) -> bool {
    let w = &st.world;
    w.threads[i].tid == d.tid
        && w.enabled(i)
        && d.alt < w.alts(i)
        && !matches!(
            w.threads[i].pending,
            Op::Spawn { .. } | Op::Exit | Op::ProcExit { .. }
        )
}

/// With `verify-views`, checks the views kept up against a recomputation.
fn verify(p: &mut Progress, st: &HostState) {
    #[cfg(feature = "verify-views")]
    if let Err(e) = p.verify(&st.world) {
        panic!("after a step ended in place: {e}");
    }
    let _ = (p, st);
}
