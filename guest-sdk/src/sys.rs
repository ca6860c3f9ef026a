//! Raw imports from the host, module `wasmrace`: one declaration per hook of
//! docs/ABI.md, with exactly the wasm signatures listed there. Nothing else in
//! the crate talks to the host; the public modules wrap these in safe APIs.

/// The call site handed to every suspending hook: the address of the user's
/// `Location` (every caller is `#[track_caller]`, so this is the user's line,
/// not the SDK's). The host resolves it through the `__wasmrace_site_*`
/// exports, so only the address crosses the boundary.
#[track_caller]
#[inline(always)]
pub(crate) fn site() -> i32 {
    ::core::panic::Location::caller() as *const ::core::panic::Location<'static> as usize as i32
}

/// A guest pointer the host only reads through, as the ABI's `i32`
/// (wasm32: addresses fit).
#[inline(always)]
pub(crate) fn addr<T: ?Sized>(p: *const T) -> i32 {
    p as *const u8 as usize as i32
}

/// A guest pointer the host writes through (`out` parameters, receive
/// buffers). Taking `*mut` keeps the pointer derived from a unique borrow,
/// so the host's write does not alias a shared reference.
#[inline(always)]
pub(crate) fn addr_mut<T: ?Sized>(p: *mut T) -> i32 {
    p as *mut u8 as usize as i32
}

// Rustc mangles the link symbols of imports that name a wasm module, so hooks
// called `log` or `join` cannot be resolved to same-named libm or std symbols:
// they stay imports of `wasmrace` (the fixture tests check the import list).
#[link(wasm_import_module = "wasmrace")]
unsafe extern "C" {
    // Suspending hooks: each call is one scheduling point.
    pub(crate) fn spawn(arg: i32, site: i32) -> i64;
    pub(crate) fn join(tid: i64, site: i32);
    pub(crate) fn yield_now(site: i32);
    pub(crate) fn send(to: i64, ptr: i32, len: i32, site: i32);
    pub(crate) fn recv(site: i32) -> i32;
    pub(crate) fn recv_from(from: i64, site: i32) -> i32;
    pub(crate) fn cell_new(init: i64, site: i32) -> i64;
    pub(crate) fn cell_get(h: i64, site: i32) -> i64;
    pub(crate) fn cell_set(h: i64, v: i64, site: i32);
    pub(crate) fn atomic_new(init: i64, site: i32) -> i64;
    pub(crate) fn atomic_load(h: i64, site: i32) -> i64;
    pub(crate) fn atomic_store(h: i64, v: i64, site: i32);
    pub(crate) fn atomic_swap(h: i64, v: i64, site: i32) -> i64;
    pub(crate) fn atomic_fetch_add(h: i64, v: i64, site: i32) -> i64;
    pub(crate) fn atomic_compare_exchange(h: i64, current: i64, new: i64, site: i32) -> i64;
    pub(crate) fn mutex_new(site: i32) -> i64;
    pub(crate) fn mutex_lock(h: i64, site: i32);
    pub(crate) fn mutex_unlock(h: i64, site: i32);
    pub(crate) fn condvar_new(site: i32) -> i64;
    pub(crate) fn condvar_wait(cv: i64, mutex: i64, site: i32);
    pub(crate) fn condvar_notify_one(cv: i64, site: i32);
    pub(crate) fn condvar_notify_all(cv: i64, site: i32);
    pub(crate) fn table_new(site: i32) -> i64;
    pub(crate) fn table_insert(h: i64, k: i64, v: i64, out: i32, site: i32) -> i32;
    pub(crate) fn table_get(h: i64, k: i64, out: i32, site: i32) -> i32;
    pub(crate) fn table_remove(h: i64, k: i64, out: i32, site: i32) -> i32;
    pub(crate) fn register(name: i32, len: i32, tid: i64, site: i32) -> i32;
    pub(crate) fn whereis(name: i32, len: i32, out: i32, site: i32) -> i32;
    pub(crate) fn unregister(name: i32, len: i32, site: i32) -> i32;
    pub(crate) fn choose(n: i32, site: i32) -> i32;
    pub(crate) fn phase(name: i32, len: i32, site: i32);
    pub(crate) fn rwlock_new(site: i32) -> i64;
    pub(crate) fn rwlock_read(h: i64, site: i32);
    pub(crate) fn rwlock_write(h: i64, site: i32);
    pub(crate) fn rwlock_read_unlock(h: i64, site: i32);
    pub(crate) fn rwlock_write_unlock(h: i64, site: i32);
    pub(crate) fn barrier_new(n: i32, site: i32) -> i64;
    pub(crate) fn barrier_wait(h: i64, site: i32) -> i32;

    // Non-suspending hooks: run inside the current step.
    pub(crate) fn current() -> i64;
    pub(crate) fn recv_take(buf: i32, out_from: i32);
    pub(crate) fn log(ptr: i32, len: i32);
    pub(crate) fn report_panic(
        msg: i32,
        msg_len: i32,
        file: i32,
        file_len: i32,
        line: i32,
        col: i32,
    );
    pub(crate) fn thread_name(tid: i64, buf: i32, cap: i32) -> i32;
}
