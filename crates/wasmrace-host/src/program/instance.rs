//! The instance a program runs on and its memory layout: instantiation
//! (finding the exports the host drives), the thread slots (Asyncify
//! buffer and shadow stack per thread, in pages the host grew itself) and
//! the pages known to be zero below each stack's low-water mark.

use super::WasmProgram;
use crate::error::{runtime, HostError};
use crate::guest::GuestInner;
use crate::hooks::{Asyncify, Enter, EnterRet, Exports, HostState};
use crate::load;
use crate::snapshot;
use crate::world::World;
use std::sync::Arc;
use wasmrace_trace::{Failure, FailureKind};
use wasmtime::{Store, Trap, Val};

/// Thread slots the first growth makes room for: main and three threads,
/// so that most tests never grow memory after the start and `reset` can
/// restore the start state instead of instantiating again (and a fresh
/// instance starts with room for them, `load::headroom`).
pub(crate) const FIRST_SLOT_BATCH: u64 = 4;

impl WasmProgram {
    /// Bytes of memory the guest has: its own memory size when instrumented
    /// (the real memory may be larger, zero above it), else the real size.
    pub(super) fn mem_len(&mut self) -> usize {
        match &self.ex.pages {
            Some(g) => g.get(&mut self.store).i32().unwrap_or(0) as u32 as usize * 65536,
            None => self.ex.memory.data_size(&self.store),
        }
    }

    /// Grows the guest's memory by `pages` wasm pages; returns the old size
    /// in pages, like `memory.grow`. With a virtual size, real memory grows
    /// only past its current size.
    pub(super) fn grow(&mut self, pages: u64) -> wasmtime::Result<u64> {
        let Some(g) = self.ex.pages else {
            return self.ex.memory.grow(&mut self.store, pages);
        };
        let old = (self.mem_len() / 65536) as u64;
        let real = (self.ex.memory.data_size(&self.store) / 65536) as u64;
        if old + pages > real {
            self.ex.memory.grow(&mut self.store, old + pages - real)?;
        }
        g.set(&mut self.store, Val::I32((old + pages) as i32))?;
        Ok(old)
    }

    /// Takes a free thread slot, growing memory when there is none. Memory
    /// grows by a batch of slots at a time (four first, then as many as are
    /// in use, at least two): each `memory.grow` is a system call, and most tests spawn
    /// several threads. Deterministic: the batch depends only on the
    /// execution so far. Returns the slot index, or a memory-limit failure.
    pub(super) fn alloc_slot(&mut self) -> Result<Result<u32, Failure>, HostError> {
        let w = &mut self.store.data_mut().world;
        if let Some(s) = w.free_slots.pop() {
            // The slot's stack starts a new life: its last thread's
            // accesses are not the new thread's to race with.
            if let Some(d) = w.races.as_mut() {
                let bytes = self.guest.config.slot_bytes() as u32;
                d.forget(w.slot_bases[s as usize], bytes);
            }
            return Ok(Ok(s));
        }
        let bytes = self.guest.config.slot_bytes();
        let in_use = self.store.data().world.slot_bases.len() as u64;
        let mut batch = if in_use == 0 {
            FIRST_SLOT_BATCH
        } else {
            in_use.clamp(2, 16)
        };
        let old = loop {
            match self.grow(batch * bytes / 65536) {
                Ok(old) => break old,
                // Near the limit: fall back to one slot before giving up.
                Err(_) if batch > 1 => {
                    self.store.data_mut().limits.hit = false;
                    batch = 1;
                }
                Err(_) if self.store.data().limits.hit => {
                    return Ok(Err(self.memory_failure(None)))
                }
                // Not our limit: the module's own maximum.
                Err(_) => return Ok(Err(self.module_maximum_failure())),
            }
        };
        let w = &mut self.store.data_mut().world;
        let first = w.slot_bases.len() as u32;
        for k in 0..batch {
            let base = u32::try_from(old * 65536 + k * bytes).map_err(runtime)?;
            w.slot_bases.push(base);
            w.slot_lows.push(base + bytes as u32);
        }
        // Hand out the lowest new slot now; keep the rest, lowest on top.
        for k in (1..batch as u32).rev() {
            w.free_slots.push(first + k);
        }
        Ok(Ok(first))
    }

    pub(super) fn memory_failure(&self, thread: Option<String>) -> Failure {
        Failure::new(
            FailureKind::MemoryLimit,
            thread,
            format!(
                "guest memory would exceed its limit of `{}` MiB; raise --max-memory-mb",
                self.guest.config.max_memory_bytes >> 20
            ),
        )
    }

    /// The failure of a thread slot that does not fit under the memory
    /// maximum the module declares (`--max-memory-mb` was not the limit).
    fn module_maximum_failure(&self) -> Failure {
        let max = self.guest.analysis.declared.memory_maximum.unwrap_or(0);
        Failure::new(
            FailureKind::MemoryLimit,
            None,
            format!(
                "the module declares a memory maximum of `{max}` pages (`{}` KiB), too small for another thread's `{}` KiB slot (Asyncify buffer and stack); link it with a larger maximum (`-C link-arg=--max-memory=<bytes>`) or none",
                max * 64,
                self.guest.config.slot_bytes() >> 10
            ),
        )
    }

    /// The failure of an execution whose guest made the host hold more
    /// than `--max-host-memory-mb` (`World::held`), blamed on the thread
    /// whose step passed it.
    pub(super) fn host_memory_failure(&self, thread: Option<String>) -> Failure {
        Failure::new(
            FailureKind::MemoryLimit,
            thread,
            format!(
                "the guest made the host hold more than its limit of {} (messages, names, table entries, threads); raise --max-host-memory-mb",
                match self.guest.config.max_host_bytes {
                    b if b >= 1 << 20 => format!("`{}` MiB", b >> 20),
                    b => format!("`{b}` bytes"),
                }
            ),
        )
    }

    pub(super) fn slot_stack_top(&self, slot: u32) -> u32 {
        let base = self.store.data().world.slot_bases[slot as usize];
        base + self.guest.config.slot_bytes() as u32
    }

    /// Pages known to be zero without reading them: stack pages below the
    /// low-water mark of the stack region they belong to (the main stack
    /// when the module lays it out first; every thread slot's stack), in
    /// modules with a dirty-page map, whose marks lower a mark that a
    /// write below it proved wrong (`World::note_written`).
    pub(super) fn known_zero(&self, world: &World, pages: usize) -> Vec<bool> {
        let mut mask = vec![false; pages];
        // Without a dirty-page map nothing would show a write below a
        // stack pointer (`World::note_written`): claim nothing.
        if self.ex.stack_low.is_none() || self.map.is_none() {
            return mask;
        }
        let page = snapshot::PAGE as u32;
        let mut mark = |from: u32, to: u32| {
            // Whole pages inside [from, to).
            let first = from.div_ceil(page) as usize;
            let end = (to / page) as usize;
            for m in mask.iter_mut().take(end.min(pages)).skip(first) {
                *m = true;
            }
        };
        if let (Some(region), Some(main)) = (self.ex.stack_region, world.threads.first()) {
            if main.low > region {
                mark(region, main.low);
            }
        }
        let async_bytes = self.guest.config.asyncify_buffer_bytes;
        for (base, low) in world.slot_bases.iter().zip(&world.slot_lows) {
            let bottom = base + async_bytes;
            if *low > bottom {
                mark(bottom, *low);
            }
        }
        mask
    }

    /// Checks the low-water-mark reasoning on the current state: every page
    /// `known_zero` skips really is zero. For tests; returns the first page
    /// that is not.
    #[doc(hidden)]
    pub fn verify_known_zero(&mut self) -> Result<usize, String> {
        self.settle_marks();
        let data = self.ex.memory.data(&self.store);
        let zero = self.known_zero(&self.store.data().world, data.len() / snapshot::PAGE);
        for (i, z) in zero.iter().enumerate() {
            if *z && !snapshot::is_zero(&data[i * snapshot::PAGE..(i + 1) * snapshot::PAGE]) {
                return Err(format!("page {i} is assumed zero but is not"));
            }
        }
        Ok(zero.iter().filter(|z| **z).count())
    }
}

pub(super) fn instantiate(
    guest: &GuestInner,
    test: &str,
    tracing: bool,
) -> Result<(Store<HostState>, Arc<Exports>), HostError> {
    let mut state = HostState::new(&guest.config, tracing);
    state.race_sites = guest.analysis.races.clone();
    state.std_guest = guest.analysis.std.is_some();
    let mut store = Store::new(&guest.engine, state);
    store.limiter(|s| &mut s.limits);
    store.set_fuel(guest.config.step_fuel()).map_err(runtime)?;
    let inst = guest
        .pre
        .instantiate(&mut store)
        .map_err(|e| start_failed(guest, &mut store, e))?;
    let missing = |what: &str| HostError::Instrument {
        name: guest.name.clone(),
        message: format!("instrumented module lacks export `{what}`"),
    };
    let memory = inst
        .get_memory(&mut store, "memory")
        .ok_or_else(|| missing("memory"))?;
    macro_rules! func {
        ($name:expr) => {
            inst.get_typed_func(&mut store, $name)
                .map_err(|_| missing($name))?
        };
    }
    let (test_export, wasi) = guest.entry(test);
    store.data_mut().wasi = wasi;
    let mut globals = Vec::new();
    for i in 0.. {
        match inst.get_global(&mut store, &format!("{}{i}", load::GLOBAL_EXPORT_PREFIX)) {
            Some(g) => {
                let ty = g.ty(&store);
                globals.push((g, ty));
            }
            None => break,
        }
    }
    let site = match (
        inst.get_typed_func(&mut store, "__wasmrace_site_file_ptr")
            .ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_file_len")
            .ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_line").ok(),
        inst.get_typed_func(&mut store, "__wasmrace_site_col").ok(),
    ) {
        (Some(a), Some(b), Some(c), Some(d)) => Some([a, b, c, d]),
        _ => None,
    };
    let asyncify = match (
        inst.get_global(&mut store, load::ASYNCIFY_STATE_EXPORT),
        inst.get_global(&mut store, load::ASYNCIFY_DATA_EXPORT),
    ) {
        (Some(state), Some(data)) => Asyncify::Globals { state, data },
        _ => Asyncify::Funcs {
            start_unwind: func!("asyncify_start_unwind"),
            stop_unwind: func!("asyncify_stop_unwind"),
            start_rewind: func!("asyncify_start_rewind"),
            stop_rewind: func!("asyncify_stop_rewind"),
        },
    };
    let enter_of = |store: &mut Store<HostState>, export: &str| {
        inst.get_typed_func::<(i32, i32, i32, i32, i32, i32, i64, i32), EnterRet>(
            &mut *store,
            &format!("{}{export}", load::ENTER_PREFIX),
        )
        .ok()
    };
    // Trampolines only work with Asyncify's globals exported (they set them).
    let enter = match (&asyncify, enter_of(&mut store, &test_export)) {
        (Asyncify::Globals { .. }, Some(test)) => Some(Enter {
            test,
            thread_start: enter_of(&mut store, load::THREAD_START),
        }),
        _ => None,
    };
    let ex = Arc::new(Exports {
        memory,
        asyncify,
        test: func!(&test_export),
        thread_start: inst.get_typed_func(&mut store, load::THREAD_START).ok(),
        init: inst.get_typed_func(&mut store, load::INIT).ok(),
        sp: inst
            .get_global(&mut store, load::STACK_POINTER_EXPORT)
            .ok_or_else(|| missing(load::STACK_POINTER_EXPORT))?,
        stack_low: inst.get_global(&mut store, load::STACK_LOW_EXPORT),
        stack_region: inst
            .get_global(&mut store, load::STACK_REGION_EXPORT)
            .and_then(|g| g.get(&mut store).i32())
            .map(|v| v as u32),
        globals,
        pages: inst.get_global(&mut store, load::MEMORY_PAGES_EXPORT),
        site,
        enter,
        dirty_base: inst.get_global(&mut store, load::DIRTY_BASE_EXPORT),
        tls: inst.get_global(&mut store, load::TLS_BASE_EXPORT),
    });
    store.data_mut().ex = Some(ex.clone());
    Ok((store, ex))
}

/// Instantiation failed: when the module's start function trapped (it runs
/// inside instantiation, before any test, the same way every time), one
/// line saying how, naming the flag for the bounds; else the runtime's
/// error. Never wasmtime's backtrace.
fn start_failed(guest: &GuestInner, store: &mut Store<HostState>, e: wasmtime::Error) -> HostError {
    let config = &guest.config;
    let what = if store.data().limits.hit {
        format!(
            "grew memory past the guest memory limit of `{}` MiB; raise --max-memory-mb",
            config.max_memory_bytes >> 20
        )
    } else {
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => format!(
                "ran `{}` instructions without returning (an endless loop?); raise --fuel-per-step{}",
                config.fuel_per_step,
                crate::config::fuel_note(config)
            ),
            Some(t) => format!("trapped: {}", trap_text(t)),
            // A hook's refusal (a hook called before any thread runs).
            None => match e.downcast_ref::<crate::hooks::GuestFault>() {
                Some(fault) => format!("failed: {}", fault.0.message),
                None => return runtime(e),
            },
        }
    };
    HostError::StartFunction {
        name: guest.name.clone(),
        what,
    }
}

/// A trap in words, without the `wasm trap: ` its `Display` starts with.
pub(super) fn trap_text(t: &Trap) -> String {
    let text = t.to_string();
    match text.strip_prefix("wasm trap: ") {
        Some(rest) => rest.to_string(),
        None => text,
    }
}
