//! The hooks' wasm signatures as docs/ABI.md gives them, by name: what the
//! generated modules import (`generate.rs`, `std_modules.rs`).

use wasm_encoder::ValType;

const I32: ValType = ValType::I32;
const I64: ValType = ValType::I64;

/// A hook's wasm signature as docs/ABI.md gives it: the parameters (for a
/// suspending hook, before its `site: i32`) and the result.
pub(crate) type Signature = (&'static [ValType], &'static [ValType]);

/// The suspending hooks' signatures without the trailing `site`, by name.
pub(crate) fn suspending_signature(hook: &str) -> Option<Signature> {
    Some(match hook {
        "spawn" => (&[I32], &[I64]),
        "join" => (&[I64], &[]),
        "yield_now" => (&[], &[]),
        "send" => (&[I64, I32, I32], &[]),
        "recv" => (&[], &[I32]),
        "recv_from" => (&[I64], &[I32]),
        "cell_new" | "atomic_new" => (&[I64], &[I64]),
        "cell_get" | "atomic_load" => (&[I64], &[I64]),
        "cell_set" | "atomic_store" => (&[I64, I64], &[]),
        "atomic_swap" | "atomic_fetch_add" => (&[I64, I64], &[I64]),
        "atomic_compare_exchange" => (&[I64, I64, I64], &[I64]),
        "mutex_new" | "condvar_new" | "table_new" | "rwlock_new" => (&[], &[I64]),
        "mutex_lock" | "mutex_unlock" | "condvar_notify_one" | "condvar_notify_all" => {
            (&[I64], &[])
        }
        "rwlock_read" | "rwlock_write" | "rwlock_read_unlock" | "rwlock_write_unlock" => {
            (&[I64], &[])
        }
        "condvar_wait" => (&[I64, I64], &[]),
        "table_insert" => (&[I64, I64, I64, I32], &[I32]),
        "table_get" | "table_remove" => (&[I64, I64, I32], &[I32]),
        "register" => (&[I32, I32, I64], &[I32]),
        "whereis" => (&[I32, I32, I32], &[I32]),
        "unregister" => (&[I32, I32], &[I32]),
        "choose" => (&[I32], &[I32]),
        "phase" => (&[I32, I32], &[]),
        "barrier_new" => (&[I32], &[I64]),
        "barrier_wait" => (&[I64], &[I32]),
        "mem_load" => (&[I32, I32], &[I64]),
        "mem_store" => (&[I32, I32, I64], &[]),
        "mem_rmw" => (&[I32, I32, I32, I64], &[I64]),
        "mem_cmpxchg" => (&[I32, I32, I64, I64], &[I64]),
        "mem_wait" => (&[I32, I32, I64, I64], &[I32]),
        "mem_notify" => (&[I32, I32], &[I32]),
        "proc_exit" => (&[I32], &[]),
        _ => return None,
    })
}

/// The plain hooks' signatures, by name.
pub(crate) fn plain_signature(hook: &str) -> Option<Signature> {
    Some(match hook {
        "current" => (&[], &[I64]),
        "recv_take" => (&[I32, I32], &[]),
        "log" => (&[I32, I32], &[]),
        "report_panic" => (&[I32, I32, I32, I32, I32, I32], &[]),
        "thread_name" => (&[I64, I32, I32], &[I32]),
        "wasi_tid" => (&[I64], &[I32]),
        "wasi_tid_self" => (&[], &[I32]),
        "wasi_args_get"
        | "wasi_args_sizes_get"
        | "wasi_environ_get"
        | "wasi_environ_sizes_get"
        | "wasi_clock_res_get"
        | "wasi_fd_fdstat_get"
        | "wasi_fd_prestat_get"
        | "wasi_random_get" => (&[I32, I32], &[I32]),
        "wasi_clock_time_get" => (&[I32, I64, I32], &[I32]),
        "wasi_fd_write" | "wasi_fd_read" | "wasi_poll_oneoff" => (&[I32, I32, I32, I32], &[I32]),
        "wasi_fd_close" => (&[I32], &[I32]),
        "wasi_fd_seek" => (&[I32, I64, I32, I32], &[I32]),
        "wasi_fd_prestat_dir_name" => (&[I32, I32, I32], &[I32]),
        "race_read" | "race_write" | "race_acquire" | "race_release" => (&[I32, I32, I32], &[]),
        "race_fresh" => (&[I32, I32], &[]),
        _ => return None,
    })
}
