//! The WASI calls a std guest makes, answered deterministically by plain
//! hooks (`wasi_<name>`, linked by the load-time rewrite, `load/wasi.rs`):
//! standard output and error go to the execution's log (error also to
//! the thread's panic reader, `World::note_stderr`), the arguments and
//! environment are the program's (`WasiEnv`), the clock is virtual (only
//! sleeps advance it), random bytes are fixed, and there is no file: stdin
//! is empty and no directory is preopened. Also the wasi thread ids. Every
//! errno and answer is listed in docs/ABI.md.

use super::{fault, read_bytes, write_bytes, HostState};
use crate::error::{runtime, HostError};
use crate::ops::guest_range;
use wasmtime::{Caller, Linker};

/// WASI errnos the answers use.
const ESUCCESS: i32 = 0;
const EBADF: i32 = 8;
const EINVAL: i32 = 28;
const ESPIPE: i32 = 70;
/// `thread-spawn`'s answer when the thread cannot be made.
const EAGAIN: i32 = 6;

/// Where the virtual realtime clock starts: 2026-01-01T00:00:00Z, so that
/// dates a program prints look like dates.
const REALTIME_BASE_NS: u64 = 1_767_225_600 * 1_000_000_000;

/// A std guest's command line and environment, the same in every
/// execution of a program (`Guest::program_with`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WasiEnv {
    /// The arguments, the program's name first.
    pub args: Vec<String>,
    /// `KEY=VALUE` pairs.
    pub env: Vec<String>,
}

/// Links every `wasi_*` plain hook.
pub(crate) fn link(l: &mut Linker<HostState>) -> Result<(), HostError> {
    link_ids(l)?;
    link_args(l)?;
    link_clock(l)?;
    link_fds(l)?;
    l.func_wrap(
        crate::ops::HOOK_MODULE,
        "wasi_random_get",
        |mut c: Caller<'_, HostState>, buf: i32, len: i32| -> wasmtime::Result<i32> {
            // Fixed bytes: a program's randomness (hash seeds) is the same
            // in every execution, so that a schedule replays. Checked
            // against memory first: a length of 2 GiB must not make the
            // host allocate it.
            {
                let ex = c.data().ex();
                guest_range(ex.memory.data(&c), buf, len).map_err(fault)?;
            }
            let bytes: Vec<u8> = (0..len.max(0) as u64)
                .map(|k| wasmrace_trace::mix64(k / 8).to_le_bytes()[(k % 8) as usize])
                .collect();
            write_bytes(&mut c, buf as u32, &bytes)?;
            Ok(ESUCCESS)
        },
    )
    .map_err(runtime)?;
    Ok(())
}

fn link_ids(l: &mut Linker<HostState>) -> Result<(), HostError> {
    let m = crate::ops::HOOK_MODULE;
    // A wasi thread id is the thread's index in this execution plus one:
    // unique, positive, and `main` is 1.
    l.func_wrap(m, "wasi_tid", |c: Caller<'_, HostState>, tid: i64| -> i32 {
        match c.data().world.thread_index(wasmrace_trace::Tid(tid as u64)) {
            Some(i) => i as i32 + 1,
            None => -EAGAIN,
        }
    })
    .map_err(runtime)?;
    l.func_wrap(m, "wasi_tid_self", |c: Caller<'_, HostState>| -> i32 {
        c.data().cur as i32 + 1
    })
    .map_err(runtime)?;
    Ok(())
}

/// Writes a list of strings WASI's way: pointers at `ptrs`, the
/// NUL-terminated bytes at `buf`.
fn put_list(
    c: &mut Caller<'_, HostState>,
    list: &[String],
    ptrs: i32,
    buf: i32,
) -> wasmtime::Result<i32> {
    let mut at = buf as u32;
    for (k, s) in list.iter().enumerate() {
        write_bytes(c, ptrs as u32 + 4 * k as u32, &at.to_le_bytes())?;
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        write_bytes(c, at, &b)?;
        at += b.len() as u32;
    }
    Ok(ESUCCESS)
}

/// Writes a list's count and its bytes with terminators.
fn put_sizes(
    c: &mut Caller<'_, HostState>,
    list: &[String],
    count: i32,
    size: i32,
) -> wasmtime::Result<i32> {
    let bytes: usize = list.iter().map(|s| s.len() + 1).sum();
    write_bytes(c, count as u32, &(list.len() as u32).to_le_bytes())?;
    write_bytes(c, size as u32, &(bytes as u32).to_le_bytes())?;
    Ok(ESUCCESS)
}

fn link_args(l: &mut Linker<HostState>) -> Result<(), HostError> {
    let m = crate::ops::HOOK_MODULE;
    l.func_wrap(
        m,
        "wasi_args_get",
        |mut c: Caller<'_, HostState>, p: i32, b: i32| {
            let env = c.data().wasi.clone();
            put_list(&mut c, &env.args, p, b)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_args_sizes_get",
        |mut c: Caller<'_, HostState>, n: i32, s: i32| {
            let env = c.data().wasi.clone();
            put_sizes(&mut c, &env.args, n, s)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_environ_get",
        |mut c: Caller<'_, HostState>, p: i32, b: i32| {
            let env = c.data().wasi.clone();
            put_list(&mut c, &env.env, p, b)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_environ_sizes_get",
        |mut c: Caller<'_, HostState>, n: i32, s: i32| {
            let env = c.data().wasi.clone();
            put_sizes(&mut c, &env.env, n, s)
        },
    )
    .map_err(runtime)?;
    Ok(())
}

/// The virtual clock `id` reads now: realtime from a fixed date, the
/// others from zero.
fn clock_now(st: &HostState, id: i32) -> u64 {
    let base = if id == 0 { REALTIME_BASE_NS } else { 0 };
    base + st.world.clock_ns
}

fn link_clock(l: &mut Linker<HostState>) -> Result<(), HostError> {
    let m = crate::ops::HOOK_MODULE;
    l.func_wrap(
        m,
        "wasi_clock_time_get",
        |mut c: Caller<'_, HostState>,
         id: i32,
         _precision: i64,
         out: i32|
         -> wasmtime::Result<i32> {
            if !(0..=3).contains(&id) {
                return Ok(EINVAL);
            }
            let now = clock_now(c.data(), id);
            write_bytes(&mut c, out as u32, &now.to_le_bytes())?;
            Ok(ESUCCESS)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_clock_res_get",
        |mut c: Caller<'_, HostState>, _id: i32, out: i32| -> wasmtime::Result<i32> {
            write_bytes(&mut c, out as u32, &1u64.to_le_bytes())?;
            Ok(ESUCCESS)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(m, "wasi_poll_oneoff", poll_oneoff)
        .map_err(runtime)?;
    Ok(())
}

/// `poll_oneoff(in, out, n, nevents)` after its yield: every subscription
/// is ready at once; a clock subscription (`thread::sleep`) moves the
/// virtual clock to its deadline.
fn poll_oneoff(
    mut c: Caller<'_, HostState>,
    subs: i32,
    events: i32,
    n: i32,
    nevents: i32,
) -> wasmtime::Result<i32> {
    const SUB: u32 = 48;
    const EVENT: u32 = 32;
    if n <= 0 || n > 1024 {
        return Ok(EINVAL);
    }
    let input = read_bytes(&mut c, subs, n * SUB as i32)?;
    for k in 0..n as u32 {
        let s = &input[(k * SUB) as usize..((k + 1) * SUB) as usize];
        let userdata = &s[0..8];
        let tag = s[8];
        if tag == 0 {
            let id = u32::from_le_bytes(s[16..20].try_into().expect("4 bytes"));
            let timeout = u64::from_le_bytes(s[24..32].try_into().expect("8 bytes"));
            let abstime = u16::from_le_bytes(s[40..42].try_into().expect("2 bytes")) & 1 == 1;
            let st = c.data_mut();
            let now = clock_now(st, id as i32);
            let deadline = if abstime {
                timeout
            } else {
                now.saturating_add(timeout)
            };
            st.world.clock_ns += deadline.saturating_sub(now);
        }
        let mut event = [0u8; EVENT as usize];
        event[..8].copy_from_slice(userdata);
        event[10] = tag;
        write_bytes(&mut c, events as u32 + k * EVENT, &event)?;
    }
    write_bytes(&mut c, nevents as u32, &(n as u32).to_le_bytes())?;
    Ok(ESUCCESS)
}

/// The bytes of an iovec list `(iovs, len)`, at most `cap` of them.
fn gather(
    c: &mut Caller<'_, HostState>,
    iovs: i32,
    len: i32,
    cap: usize,
) -> wasmtime::Result<(Vec<u8>, u32)> {
    if !(0..=1024).contains(&len) {
        return Err(fault(format!("fd_write with `{len}` iovecs")));
    }
    let list = read_bytes(c, iovs, len * 8)?;
    let (mut bytes, mut total) = (Vec::new(), 0u32);
    for io in list.chunks_exact(8) {
        let ptr = u32::from_le_bytes(io[..4].try_into().expect("4 bytes"));
        let n = u32::from_le_bytes(io[4..].try_into().expect("4 bytes"));
        let keep = n.min(cap.saturating_sub(bytes.len()) as u32);
        let b = read_bytes(c, ptr as i32, keep as i32)?;
        bytes.extend_from_slice(&b);
        total = total.saturating_add(n);
    }
    Ok((bytes, total))
}

/// Standard error bytes a step may hand the panic reader: a panic
/// message is far shorter.
const STDERR_WRITE_MAX: usize = 8192;

fn fd_write(
    mut c: Caller<'_, HostState>,
    fd: i32,
    iovs: i32,
    len: i32,
    out: i32,
) -> wasmtime::Result<i32> {
    if fd != 1 && fd != 2 {
        return Ok(EBADF);
    }
    let (bytes, total) = gather(&mut c, iovs, len, STDERR_WRITE_MAX)?;
    let st = c.data_mut();
    if fd == 2 {
        let cur = super::running(st)?;
        st.world.note_stderr(cur, &bytes);
    }
    if st.tracing {
        super::keep_log(st, &bytes);
    }
    write_bytes(&mut c, out as u32, &total.to_le_bytes())?;
    Ok(ESUCCESS)
}

fn link_fds(l: &mut Linker<HostState>) -> Result<(), HostError> {
    let m = crate::ops::HOOK_MODULE;
    l.func_wrap(m, "wasi_fd_write", fd_write).map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_fd_read",
        |mut c: Caller<'_, HostState>,
         fd: i32,
         _iovs: i32,
         _len: i32,
         out: i32|
         -> wasmtime::Result<i32> {
            if fd != 0 {
                return Ok(EBADF);
            }
            // Standard input is empty.
            write_bytes(&mut c, out as u32, &0u32.to_le_bytes())?;
            Ok(ESUCCESS)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_fd_close",
        |_c: Caller<'_, HostState>, fd: i32| -> i32 {
            if (0..=2).contains(&fd) {
                ESUCCESS
            } else {
                EBADF
            }
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_fd_fdstat_get",
        |mut c: Caller<'_, HostState>, fd: i32, out: i32| -> wasmtime::Result<i32> {
            if !(0..=2).contains(&fd) {
                return Ok(EBADF);
            }
            // A character device with the rights to read and write.
            let mut stat = [0u8; 24];
            stat[0] = 2;
            stat[8..16].copy_from_slice(&(0x2u64 | 0x40).to_le_bytes());
            write_bytes(&mut c, out as u32, &stat)?;
            Ok(ESUCCESS)
        },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_fd_seek",
        |_c: Caller<'_, HostState>, fd: i32, _off: i64, _whence: i32, _out: i32| -> i32 {
            if (0..=2).contains(&fd) {
                ESPIPE
            } else {
                EBADF
            }
        },
    )
    .map_err(runtime)?;
    // No directory is preopened: the guest sees no file system.
    l.func_wrap(
        m,
        "wasi_fd_prestat_get",
        |_c: Caller<'_, HostState>, _fd: i32, _out: i32| -> i32 { EBADF },
    )
    .map_err(runtime)?;
    l.func_wrap(
        m,
        "wasi_fd_prestat_dir_name",
        |_c: Caller<'_, HostState>, _fd: i32, _p: i32, _n: i32| -> i32 { EBADF },
    )
    .map_err(runtime)?;
    Ok(())
}
