//! The hook wrappers' offer to go on in place (`__onward`): when the
//! explorer decides the next step for the thread that just reached a hook,
//! the thread takes it inside that hook call instead of unwinding to the
//! host and being rewound. `__onward` ends the step under way as the host
//! would after the unwind (the same `Progress` code), offers it to the
//! explorer, and runs the decided operation, handing its result back to the
//! wrapper. Whatever the host must do outside wasm (start spawned threads,
//! record a trace, fail on the stack or the host memory bound) makes it
//! decline before it changes anything. The program sets what it reaches
//! ([`Onward`]) around its call into wasm (`program::onward`); this file is
//! the hook's side, so that the hooks need nothing from the program.

use super::HostState;
use crate::ops::{decode_op, Op};
use crate::progress::Progress;
use crate::world::{put_guest_bytes, Entry, GuestMem, Outcome};
use wasmrace_explore::{Onward as Answer, OnwardFn, Status};
use wasmrace_trace::{Decision, Failure, FailureKind};
use wasmtime::Caller;

/// What `__onward` reaches while `step_on` takes a step: the explorer's
/// callback, and, during the call into wasm that runs the decided thread,
/// the program's `Progress`. Both are raw pointers, set by the program
/// around that call and cleared after it.
pub(crate) struct Onward {
    /// The explorer's callback, its lifetime erased (`step_in_place`).
    pub(crate) callback: *mut OnwardFn<'static>,
    /// The program's progress while its thread runs, else null.
    pub(crate) progress: *mut Progress,
    /// The guest's memory.
    pub(crate) memory: wasmtime::Memory,
    /// The fuel a step starts with.
    pub(crate) fuel: u64,
    /// `HostConfig::max_host_bytes`.
    pub(crate) max_host_bytes: u64,
    /// Whether the wrappers pass the stack's low mark.
    pub(crate) tracks_low: bool,
}

// SAFETY: an `Onward` lives in the store data only while the thread that
// set it runs a step (`step_on`); its pointers are dereferenced only inside
// hook calls that step makes, on that thread.
unsafe impl Send for Onward {}

/// The wrapper's answer: go on with this result (1), or unwind (0).
type Go = (i32, i64);

const UNWIND: Go = (0, 0);

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
