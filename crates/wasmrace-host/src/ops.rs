//! The one declaration of every guest operation: its `Op` variant and
//! fields, the `world/` kind that runs it, its `OpKind`, which other
//! threads' views running it can change, and, for the operations a guest
//! calls, the suspending hook (name, wasm signature, how its raw
//! parameters decode into the `Op`). The `Op` enum, the hook list the
//! import audit and Asyncify use, the decoder and the linker registration
//! are all derived from `for_each_op!` below; `world/mod.rs` derives its
//! dispatch from the same table. Adding an operation is one line here plus
//! its behaviour in its kind's file.

use wasmrace_trace::OpKind;
use wasmtime::{Caller, Linker};

/// The import module of every hook.
pub const HOOK_MODULE: &str = "wasmrace";

/// Parameters a suspending hook has besides its site, at most.
pub const OP_ARGS: usize = 4;

/// The import the hook wrappers add (`load::trampolines`), never a guest's
/// own: a wrapper's offer to go on in place (`program::onward`).
pub const ONWARD_HOOK: &str = "__onward";

/// Hooks that run inside the current step (implemented in `hooks/`).
pub const PLAIN_HOOKS: &[&str] = &[
    "current",
    "recv_take",
    "log",
    "report_panic",
    "thread_name",
    // A std guest's, added by its load-time rewrite (`load/wasi.rs`,
    // `hooks/wasi.rs`): the wasi thread id of a spawned thread and of the
    // running one, and the WASI calls the host answers.
    "wasi_tid",
    "wasi_tid_self",
    "wasi_args_get",
    "wasi_args_sizes_get",
    "wasi_environ_get",
    "wasi_environ_sizes_get",
    "wasi_clock_time_get",
    "wasi_clock_res_get",
    "wasi_fd_write",
    "wasi_fd_read",
    "wasi_fd_close",
    "wasi_fd_fdstat_get",
    "wasi_fd_seek",
    "wasi_fd_prestat_get",
    "wasi_fd_prestat_dir_name",
    "wasi_random_get",
    "wasi_poll_oneoff",
    // The race detector's (`load/races.rs`, `hooks/races.rs`).
    "race_read",
    "race_write",
    "race_acquire",
    "race_release",
    "race_fresh",
];

/// Which thread views running an operation can change besides the running
/// thread's own (`program/views.rs` recomputes only those; the
/// `verify-views` feature checks the claim after every step of the fixture
/// tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Only the running thread's view.
    Own,
    /// Others' enabledness and alternatives (a lock taken or released, a
    /// message sent, a notification, a spawn or an exit).
    Others,
    /// Also others' accesses (the registry: a pending `Unregister` names
    /// who holds the name; a pending barrier arrival, the generation).
    OthersAccesses,
    /// Every thread's view (the process ended: every thread stopped).
    All,
}

/// Calls `$m!` with the operation table. An entry is
/// `Variant { fields } => kind, OpKind, Effect` and, for a suspending
/// hook, `, "hook"(params) -> result, |mem| decoded Op`, where the params
/// are the wasm parameters before the call site (docs/ABI.md) and `mem` is
/// the guest's memory (for byte arguments). The order of hook entries is
/// the hook numbering the instrumentation records (`load::OP_ARGS`
/// record), so append new hooks rather than reorder.
macro_rules! for_each_op {
    ($m:ident) => {
        $m! {
            /// Placeholder before a thread's first segment has run.
            Start => thread, Yield, Own;
            Spawn { arg: u32 } => thread, Spawn, Others,
                "spawn"(arg: i32) -> i64, |_mem| Op::Spawn { arg: arg as u32 };
            Join { target: u64 } => thread, Join, Own,
                "join"(tid: i64) -> (), |_mem| Op::Join { target: tid as u64 };
            Yield => thread, Yield, Own,
                "yield_now"() -> (), |_mem| Op::Yield;
            Send { to: u64, data: Bytes } => mailbox, Send, Others,
                "send"(to: i64, ptr: i32, len: i32) -> (),
                |mem| Op::Send { to: to as u64, data: guest_bytes(mem, ptr, len)? };
            Recv => mailbox, Recv, Own,
                "recv"() -> i32, |_mem| Op::Recv;
            RecvFrom { from: u64 } => mailbox, RecvFrom, Own,
                "recv_from"(from: i64) -> i32, |_mem| Op::RecvFrom { from: from as u64 };
            CellNew { init: u64 } => cell, CellNew, Own,
                "cell_new"(init: i64) -> i64, |_mem| Op::CellNew { init: init as u64 };
            CellGet { h: u64 } => cell, CellGet, Own,
                "cell_get"(h: i64) -> i64, |_mem| Op::CellGet { h: h as u64 };
            CellSet { h: u64, v: u64 } => cell, CellSet, Own,
                "cell_set"(h: i64, v: i64) -> (), |_mem| Op::CellSet { h: h as u64, v: v as u64 };
            AtomicNew { init: u64 } => atomic, AtomicNew, Own,
                "atomic_new"(init: i64) -> i64, |_mem| Op::AtomicNew { init: init as u64 };
            AtomicLoad { h: u64 } => atomic, AtomicLoad, Own,
                "atomic_load"(h: i64) -> i64, |_mem| Op::AtomicLoad { h: h as u64 };
            AtomicStore { h: u64, v: u64 } => atomic, AtomicStore, Own,
                "atomic_store"(h: i64, v: i64) -> (),
                |_mem| Op::AtomicStore { h: h as u64, v: v as u64 };
            AtomicSwap { h: u64, v: u64 } => atomic, AtomicSwap, Own,
                "atomic_swap"(h: i64, v: i64) -> i64,
                |_mem| Op::AtomicSwap { h: h as u64, v: v as u64 };
            AtomicFetchAdd { h: u64, v: u64 } => atomic, AtomicFetchAdd, Own,
                "atomic_fetch_add"(h: i64, v: i64) -> i64,
                |_mem| Op::AtomicFetchAdd { h: h as u64, v: v as u64 };
            AtomicCas { h: u64, current: u64, new: u64 } => atomic, AtomicCompareExchange, Own,
                "atomic_compare_exchange"(h: i64, current: i64, new: i64) -> i64,
                |_mem| Op::AtomicCas { h: h as u64, current: current as u64, new: new as u64 };
            MutexNew => mutex, MutexNew, Own,
                "mutex_new"() -> i64, |_mem| Op::MutexNew;
            MutexLock { h: u64 } => mutex, MutexLock, Others,
                "mutex_lock"(h: i64) -> (), |_mem| Op::MutexLock { h: h as u64 };
            MutexUnlock { h: u64 } => mutex, MutexUnlock, Others,
                "mutex_unlock"(h: i64) -> (), |_mem| Op::MutexUnlock { h: h as u64 };
            CondvarNew => condvar, CondvarNew, Own,
                "condvar_new"() -> i64, |_mem| Op::CondvarNew;
            CondvarWait { cv: u64, m: u64 } => condvar, CondvarWait, Others,
                "condvar_wait"(cv: i64, m: i64) -> (),
                |_mem| Op::CondvarWait { cv: cv as u64, m: m as u64 };
            /// The second half of a wait: re-acquire `m` once notified.
            CondvarWake { cv: u64, m: u64 } => condvar, CondvarWake, Others;
            NotifyOne { cv: u64 } => condvar, CondvarNotifyOne, Others,
                "condvar_notify_one"(cv: i64) -> (), |_mem| Op::NotifyOne { cv: cv as u64 };
            NotifyAll { cv: u64 } => condvar, CondvarNotifyAll, Others,
                "condvar_notify_all"(cv: i64) -> (), |_mem| Op::NotifyAll { cv: cv as u64 };
            TableNew => table, TableNew, Own,
                "table_new"() -> i64, |_mem| Op::TableNew;
            TableInsert { h: u64, k: u64, v: u64, out: u32 } => table, TableInsert, Own,
                "table_insert"(h: i64, k: i64, v: i64, out: i32) -> i32,
                |_mem| Op::TableInsert { h: h as u64, k: k as u64, v: v as u64, out: out as u32 };
            TableGet { h: u64, k: u64, out: u32 } => table, TableGet, Own,
                "table_get"(h: i64, k: i64, out: i32) -> i32,
                |_mem| Op::TableGet { h: h as u64, k: k as u64, out: out as u32 };
            TableRemove { h: u64, k: u64, out: u32 } => table, TableRemove, Own,
                "table_remove"(h: i64, k: i64, out: i32) -> i32,
                |_mem| Op::TableRemove { h: h as u64, k: k as u64, out: out as u32 };
            Register { name: Bytes, tid: u64 } => registry, Register, OthersAccesses,
                "register"(ptr: i32, len: i32, tid: i64) -> i32,
                |mem| Op::Register { name: guest_bytes(mem, ptr, len)?, tid: tid as u64 };
            Whereis { name: Bytes, out: u32 } => registry, Whereis, Own,
                "whereis"(ptr: i32, len: i32, out: i32) -> i32,
                |mem| Op::Whereis { name: guest_bytes(mem, ptr, len)?, out: out as u32 };
            Unregister { name: Bytes } => registry, Unregister, OthersAccesses,
                "unregister"(ptr: i32, len: i32) -> i32,
                |mem| Op::Unregister { name: guest_bytes(mem, ptr, len)? };
            Choose { n: u32 } => thread, Choose, Own,
                "choose"(n: i32) -> i32, |_mem| Op::Choose { n: n as u32 };
            /// `wasmrace::phase(name)`: the guest announces a phase; no
            /// effect on the world, touches nothing.
            Phase { name: Bytes } => thread, Phase, Own,
                "phase"(ptr: i32, len: i32) -> (),
                |mem| Op::Phase { name: guest_bytes(mem, ptr, len)? };
            /// The step retiring a thread whose entry returned.
            Exit => thread, Exit, Others;
            RwLockNew => rwlock, RwLockNew, Own,
                "rwlock_new"() -> i64, |_mem| Op::RwLockNew;
            RwLockRead { h: u64 } => rwlock, RwLockRead, Others,
                "rwlock_read"(h: i64) -> (), |_mem| Op::RwLockRead { h: h as u64 };
            RwLockWrite { h: u64 } => rwlock, RwLockWrite, Others,
                "rwlock_write"(h: i64) -> (), |_mem| Op::RwLockWrite { h: h as u64 };
            RwLockReadUnlock { h: u64 } => rwlock, RwLockReadUnlock, Others,
                "rwlock_read_unlock"(h: i64) -> (), |_mem| Op::RwLockReadUnlock { h: h as u64 };
            RwLockWriteUnlock { h: u64 } => rwlock, RwLockWriteUnlock, Others,
                "rwlock_write_unlock"(h: i64) -> (), |_mem| Op::RwLockWriteUnlock { h: h as u64 };
            BarrierNew { n: u32 } => barrier, BarrierNew, Own,
                "barrier_new"(n: i32) -> i64, |_mem| Op::BarrierNew { n: n as u32 };
            // Arriving can release a generation (others' departures become
            // enabled) and moves the generation others' arrivals name.
            BarrierWait { h: u64 } => barrier, BarrierWait, OthersAccesses,
                "barrier_wait"(h: i64) -> i32, |_mem| Op::BarrierWait { h: h as u64 };
            /// The second half of a barrier wait: leave `generation` once
            /// it was released.
            BarrierLeave { h: u64, generation: u32 } => barrier, BarrierLeave, Own;
            // Linear memory's atomics, wait and notify (std guests: the
            // load-time rewrite, `load/wasi.rs`, turns each instruction into
            // a call of its hook; the host performs the operation).
            /// `*.atomic.load` of `width` bytes at `addr`.
            MemLoad { addr: u32, width: u32 } => memory, MemLoad, Own,
                "mem_load"(addr: i32, width: i32) -> i64,
                |_mem| Op::MemLoad { addr: addr as u32, width: width as u32 };
            /// `*.atomic.store` of the low `width` bytes of `v`.
            MemStore { addr: u32, width: u32, v: u64 } => memory, MemStore, Own,
                "mem_store"(addr: i32, width: i32, v: i64) -> (),
                |_mem| Op::MemStore { addr: addr as u32, width: width as u32, v: v as u64 };
            /// `*.atomic.rmw.<op>` (`memory::RMW_OPS` numbers `op`).
            MemRmw { addr: u32, width: u32, op: u32, v: u64 } => memory, MemRmw, Own,
                "mem_rmw"(addr: i32, width: i32, op: i32, v: i64) -> i64,
                |_mem| Op::MemRmw { addr: addr as u32, width: width as u32, op: op as u32, v: v as u64 };
            /// `*.atomic.rmw.cmpxchg`.
            MemCmpxchg { addr: u32, width: u32, expected: u64, new: u64 } => memory, MemCmpxchg, Own,
                "mem_cmpxchg"(addr: i32, width: i32, expected: i64, new: i64) -> i64,
                |_mem| Op::MemCmpxchg {
                    addr: addr as u32, width: width as u32, expected: expected as u64, new: new as u64,
                };
            /// `memory.atomic.wait32/64` (`width` 4 or 8; `timeout` in
            /// nanoseconds, negative: none).
            MemWait { addr: u32, width: u32, expected: u64, timeout: i64 } => memory, MemWait, Others,
                "mem_wait"(addr: i32, width: i32, expected: i64, timeout: i64) -> i32,
                |_mem| Op::MemWait {
                    addr: addr as u32, width: width as u32, expected: expected as u64, timeout,
                };
            /// The second half of a wait: return once notified (0), or
            /// timed out (2) when the wait has a timeout: its `deadline` on
            /// the virtual clock (`u64::MAX`: none), which timing out
            /// reaches.
            MemWake { addr: u32, deadline: u64 } => memory, MemWake, Others;
            /// `memory.atomic.notify`: wakes up to `count` waiters.
            MemNotify { addr: u32, count: u32 } => memory, MemNotify, Others,
                "mem_notify"(addr: i32, count: i32) -> i32,
                |_mem| Op::MemNotify { addr: addr as u32, count: count as u32 };
            /// The process ends: `proc_exit(code)`, or a std guest's main
            /// thread returned (code 0). Every thread stops.
            ProcExit { code: u32 } => thread, ProcessExit, All,
                "proc_exit"(code: i32) -> (), |_mem| Op::ProcExit { code: code as u32 };
        }
    };
}
pub(crate) use for_each_op;

/// What `for_each_op!` derives here: `Op` and its facts, the hook list,
/// the decoder and the linker registration.
macro_rules! declare_ops {
    ($(
        $(#[$doc:meta])*
        $v:ident $({ $($f:ident : $ft:ty),* })? => $handler:ident, $kind:ident, $effect:ident
        $(, $hook:literal ($($p:ident : $pt:ty),*) -> $r:ty, |$mem:ident| $decode:expr)?;
    )*) => {
        /// A pending operation with its arguments, recorded when the guest
        /// called the hook and run when the scheduler picks the thread.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum Op {
            $($(#[$doc])* $v $({ $($f: $ft),* })?,)*
        }

        impl Op {
            /// The abstract kind strategies and traces see.
            #[inline]
            pub fn kind(&self) -> OpKind {
                match self {
                    $(Op::$v { .. } => OpKind::$kind,)*
                }
            }

            /// Which views running this operation can change.
            #[inline]
            pub(crate) fn effect(&self) -> Effect {
                match self {
                    $(Op::$v { .. } => Effect::$effect,)*
                }
            }

            /// Heap bytes the arguments hold.
            pub fn heap_bytes(&self) -> usize {
                match self {
                    $(Op::$v $({ $($f),* })? => 0 $($(+ HeapBytes::heap_bytes($f))*)?,)*
                }
            }
        }

        /// Every suspending hook, in hook-number order.
        pub const SUSPENDING_HOOKS: &[&str] = &[$($($hook,)?)*];

        /// Decodes each suspending hook's raw parameters, by hook number.
        #[allow(unused_assignments, unused_mut, unused_variables)]
        const DECODERS: &[fn([i64; OP_ARGS], &[u8]) -> Result<Op, String>] = &[$($({
            fn decode(a: [i64; OP_ARGS], $mem: &[u8]) -> Result<Op, String> {
                let mut k = 0;
                $(let $p = <$pt as RawArg>::from_raw(a[k]); k += 1;)*
                Ok($decode)
            }
            decode
        },)?)*];

        /// Registers every suspending hook with its wasm signature; each
        /// call is handed to `suspend` with its hook number, its raw
        /// parameters (`i32`s zero-extended) and its call site.
        pub(crate) fn link_suspending<T: 'static>(
            l: &mut Linker<T>,
            suspend: Suspend<T>,
        ) -> wasmtime::Result<()> {
            $($(
                l.func_wrap(
                    HOOK_MODULE,
                    $hook,
                    move |mut c: Caller<'_, T>, $($p: $pt,)* site: i32| -> wasmtime::Result<$r> {
                        let given: &[i64] = &[$(RawArg::raw($p)),*];
                        let mut args = [0i64; OP_ARGS];
                        args[..given.len()].copy_from_slice(given);
                        suspend(&mut c, const { hook_index($hook) }, args, site)
                            .map(<$r as FromResume>::from_resume)
                    },
                )?;
            )?)*
            Ok(())
        }
    };
}

/// What a suspending hook hands its call to (`hooks::suspend`).
pub(crate) type Suspend<T> =
    fn(&mut Caller<'_, T>, usize, [i64; OP_ARGS], i32) -> wasmtime::Result<i64>;

for_each_op!(declare_ops);

/// Number of a suspending hook in `SUSPENDING_HOOKS`, at compile time (a
/// name missing from the list fails the build).
pub(crate) const fn hook_index(name: &str) -> usize {
    let hooks = SUSPENDING_HOOKS;
    let mut i = 0;
    while i < hooks.len() {
        let (a, b) = (hooks[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a suspending hook")
}

/// Builds the operation of a suspending hook call from its raw parameters:
/// `hook` numbers `SUSPENDING_HOOKS`, `a` holds the parameters before the
/// site in order (`i32`s zero-extended, as the wasm hook wrappers record
/// them), and byte arguments are read from `mem`. Both ways a hook is
/// reached (the wrappers' record, the linked host functions) come here.
/// An error is a guest fault, e.g. a pointer outside memory.
#[inline]
pub(crate) fn decode_op(hook: usize, a: [i64; OP_ARGS], mem: &[u8]) -> Result<Op, String> {
    match DECODERS.get(hook) {
        Some(decode) => decode(a, mem),
        None => Err(format!("unknown suspending hook `{hook}`")),
    }
}

/// Guest bytes an operation carries (a message, a name): shared, not
/// copied, by the `World` clones snapshots hold, so that a pending send of
/// a large message costs the host its bytes once.
pub(crate) type Bytes = std::sync::Arc<[u8]>;

/// The `len` bytes of guest memory at `ptr`, a hook's argument; the error
/// is the guest's fault.
pub(crate) fn guest_bytes(mem: &[u8], ptr: i32, len: i32) -> Result<Bytes, String> {
    guest_slice(mem, ptr, len).map(Bytes::from)
}

/// Checks that `len` bytes at `ptr` lie in guest memory, as
/// [`guest_bytes`] would, without copying them.
pub(crate) fn guest_range(mem: &[u8], ptr: i32, len: i32) -> Result<(), String> {
    guest_slice(mem, ptr, len).map(|_| ())
}

fn guest_slice(mem: &[u8], ptr: i32, len: i32) -> Result<&[u8], String> {
    let (p, l) = (ptr as u32 as usize, len as u32 as usize);
    mem.get(p..p.saturating_add(l))
        .ok_or_else(|| format!("hook argument points outside guest memory (`{p:#x}`, {l} bytes)"))
}

/// A hook parameter: its raw form (how the wrappers record it) and back.
trait RawArg {
    fn raw(self) -> i64;
    fn from_raw(v: i64) -> Self;
}
impl RawArg for i32 {
    fn raw(self) -> i64 {
        self as u32 as i64
    }
    fn from_raw(v: i64) -> Self {
        v as i32
    }
}
impl RawArg for i64 {
    fn raw(self) -> i64 {
        self
    }
    fn from_raw(v: i64) -> Self {
        v
    }
}

/// A hook's wasm result from the resumed operation's value.
trait FromResume {
    fn from_resume(v: i64) -> Self;
}
impl FromResume for i64 {
    fn from_resume(v: i64) -> Self {
        v
    }
}
impl FromResume for i32 {
    fn from_resume(v: i64) -> Self {
        v as i32
    }
}
impl FromResume for () {
    fn from_resume(_: i64) -> Self {}
}

/// Heap bytes an operation's field holds (`World::heap_bytes`).
trait HeapBytes {
    fn heap_bytes(&self) -> usize;
}
impl HeapBytes for u32 {
    fn heap_bytes(&self) -> usize {
        0
    }
}
impl HeapBytes for u64 {
    fn heap_bytes(&self) -> usize {
        0
    }
}
impl HeapBytes for i64 {
    fn heap_bytes(&self) -> usize {
        0
    }
}
impl HeapBytes for bool {
    fn heap_bytes(&self) -> usize {
        0
    }
}
impl HeapBytes for Bytes {
    fn heap_bytes(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_decode_into_their_declared_operation() {
        assert_eq!(SUSPENDING_HOOKS.len(), DECODERS.len());
        let mem = b"hello";
        let op = decode_op(hook_index("send"), [7, 1, 3, 0], mem).unwrap();
        assert_eq!(
            op,
            Op::Send {
                to: 7,
                data: b"ell".as_slice().into()
            }
        );
        assert_eq!(op.kind(), OpKind::Send);
        assert!(decode_op(hook_index("phase"), [4, 9, 0, 0], mem).is_err());
        let op = decode_op(hook_index("spawn"), [0xffff_ffff, 0, 0, 0], mem).unwrap();
        assert_eq!(op, Op::Spawn { arg: u32::MAX });
        assert!(decode_op(SUSPENDING_HOOKS.len(), [0; OP_ARGS], mem).is_err());
    }
}
