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
//! This file is the program's side: the explorer's callback and the
//! program's `Progress` are reached by raw pointers set for the duration
//! of one call into wasm ([`Onward`]); the hook itself is
//! `hooks::onward`.

use super::WasmProgram;
use crate::error::HostError;
use crate::hooks::onward::Onward;
use crate::progress::Progress;
use wasmrace_explore::{OnwardFn, StepInfo};
use wasmrace_trace::Decision;

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
