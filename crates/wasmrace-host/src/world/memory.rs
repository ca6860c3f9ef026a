//! Linear memory as shared objects: the atomic loads, stores,
//! read-modify-writes and compare-exchanges of a std guest, and
//! `memory.atomic.wait` / `notify`. The load-time rewrite
//! (`load/wasi.rs`) turns each such instruction into a call of its hook,
//! so that it is a scheduling point; the host performs it here, on the
//! guest's memory (`GuestMem`), when the strategy picks the thread. Every
//! wasm atomic is sequentially consistent, so one operation per step is
//! the whole semantics.
//!
//! Objects are 8-byte granules of memory (`Oid::memory`): accesses to
//! overlapping bytes always conflict (an aligned access of at most 8 bytes
//! lies in one granule), two loads commute, and a failed compare-exchange
//! only reads, which its accesses say after it ran. Each address's wait
//! queue is an object of its own (`queue`). A wait is two steps,
//! as a condition variable's: `mem.wait` compares the value and, when
//! equal, queues the thread on the address (`World::futex`); `mem.wake`
//! returns once a notify dequeued it (or, for a wait with a timeout, at
//! any time: timing out is a choice the strategies explore).

use super::{Cx, Kind, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Failure, FailureKind, Oid};

pub(super) struct Ops;

/// The read-modify-write operations, numbered as the rewrite numbers them
/// (`mem_rmw`'s `op` argument).
pub const RMW_OPS: [&str; 6] = ["add", "sub", "and", "or", "xor", "xchg"];

/// A wait without a timeout's deadline.
const NO_DEADLINE: u64 = u64::MAX;

/// `memory.atomic.wait`'s results.
const WAIT_OK: u64 = 0;
const WAIT_NOT_EQUAL: u64 = 1;
const WAIT_TIMED_OUT: u64 = 2;

/// The guest's linear memory as an operation sees it, and where its
/// dirty-page map is (`load::track_dirty_pages`): the host's writes mark
/// it as the guest's own do.
pub struct GuestMem<'a> {
    pub bytes: &'a mut [u8],
    pub dirty: Option<u32>,
}

/// Writes `bytes` into guest memory at `ptr` and marks the blocks written
/// in the dirty-page map at `map`, if any; the error is the guest's fault
/// (a pointer outside memory).
pub(crate) fn put_guest_bytes(
    mem: &mut [u8],
    map: Option<u32>,
    ptr: u32,
    bytes: &[u8],
) -> Result<(), String> {
    let p = ptr as usize;
    match mem.get_mut(p..p.saturating_add(bytes.len())) {
        Some(s) => {
            s.copy_from_slice(bytes);
            if let (Some(map), false) = (map, bytes.is_empty()) {
                let block = crate::snapshot::BLOCK;
                let (first, last) = (p / block, (p + bytes.len() - 1) / block);
                for block in first..=last {
                    if let Some(b) = mem.get_mut(map as usize + block) {
                        *b = 1;
                    }
                }
            }
            Ok(())
        }
        None => Err(format!(
            "hook output points outside guest memory (`{p:#x}`, {} bytes)",
            bytes.len()
        )),
    }
}

/// The object an access at `addr` touches: its 8-byte granule.
pub(crate) fn location(addr: u32) -> Oid {
    Oid::memory(u64::from(addr & !7))
}

/// The object of the wait queue at `addr`: what waits, wake-ups and
/// notifies touch. A notify does not touch memory, so it commutes with
/// the loads and stores of the address; it conflicts with the waits that
/// fill the queue it empties.
fn queue(addr: u32) -> Oid {
    Oid::wait_queue(u64::from(addr))
}

/// The address an operation touches, if it is one of this file's.
fn address(op: &Op) -> Option<u32> {
    match *op {
        Op::MemLoad { addr, .. }
        | Op::MemStore { addr, .. }
        | Op::MemRmw { addr, .. }
        | Op::MemCmpxchg { addr, .. }
        | Op::MemWait { addr, .. }
        | Op::MemWake { addr, .. }
        | Op::MemNotify { addr, .. } => Some(addr),
        _ => None,
    }
}

/// The bits of a `width`-byte value.
fn mask(width: u32) -> u64 {
    match width {
        8 => u64::MAX,
        w => (1u64 << (8 * w.min(7))) - 1,
    }
}

/// The threads waiting on `addr` that a notify would wake, oldest first.
fn waiters(w: &World, addr: u32) -> usize {
    w.futex.get(&addr).map_or(0, |q| q.len())
}

impl Kind for Ops {
    fn enabled(w: &World, i: usize, op: &Op) -> bool {
        match op {
            Op::MemWake { deadline, .. } => *deadline != NO_DEADLINE || w.threads[i].notified,
            _ => true,
        }
    }

    fn alts(w: &World, _i: usize, op: &Op) -> u32 {
        match *op {
            // Which one of several waiters a single wake-up takes is the
            // scheduler's choice, as for the SDK's `notify_one`.
            Op::MemNotify { addr, count: 1 } => waiters(w, addr).max(1) as u32,
            _ => 1,
        }
    }

    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match *op {
            Op::MemLoad { addr, .. } => out.push(Access::read(location(addr))),
            // Reads the value; when equal, joins the queue.
            Op::MemWait { addr, .. } => {
                out.push(Access::read(location(addr)));
                out.push(Access::write(queue(addr)));
            }
            Op::MemWake { addr, .. } | Op::MemNotify { addr, .. } => {
                out.push(Access::write(queue(addr)))
            }
            ref op => out.extend(address(op).map(|a| Access::write(location(a)))),
        }
    }

    fn waits_for(_w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::MemWake { addr, .. } => {
                format!("a notify on `{addr:#x}` (memory.atomic.wait)")
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(_w: &World, _i: usize, op: &Op) -> Option<String> {
        address(op).map(|a| format!("{a:#x}"))
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::MemLoad { addr, width } => {
                let old = match load(w, i, cx, addr, width) {
                    Ok(v) => v,
                    Err(f) => return f,
                };
                spin(w, i, cx, addr, old);
                if cx.tracing {
                    cx.detail = format!("-> {old}");
                }
                Outcome::Return(Ret::val(old))
            }
            Op::MemStore { addr, width, v } => {
                if let Err(f) = store(w, i, cx, addr, width, v) {
                    return f;
                }
                if cx.tracing {
                    cx.detail = format!("{}", v & mask(width));
                }
                Outcome::Return(Ret::unit())
            }
            Op::MemRmw { addr, width, op, v } => rmw(w, i, cx, addr, width, op, v),
            Op::MemCmpxchg {
                addr,
                width,
                expected,
                new,
            } => cmpxchg(w, i, cx, addr, width, expected, new),
            Op::MemWait {
                addr,
                width,
                expected,
                timeout,
            } => wait(w, i, cx, addr, width, expected, timeout),
            Op::MemWake { addr, deadline } => {
                let t = &mut w.threads[i];
                let notified = std::mem::take(&mut t.notified);
                if !notified {
                    let me = t.tid;
                    w.dequeue(addr, me);
                    w.clock_ns = w.clock_ns.max(deadline).saturating_add(1);
                }
                if cx.tracing {
                    cx.detail = if notified { "woken" } else { "timed out" }.into();
                }
                Outcome::Return(Ret::val(if notified { WAIT_OK } else { WAIT_TIMED_OUT }))
            }
            Op::MemNotify { addr, count } => notify(w, cx, addr, count),
            _ => unreachable!("not a memory operation"),
        }
    }
}

impl World {
    /// Takes `tid` off the queue of `addr` (a wait that timed out).
    fn dequeue(&mut self, addr: u32, tid: wasmrace_trace::Tid) {
        if let Some(q) = self.futex.get_mut(&addr) {
            q.retain(|t| *t != tid);
            if q.is_empty() {
                self.futex.remove(&addr);
            }
        }
    }
}

/// Notes that thread `i` read `value` at `addr`, and whether its last
/// step read the same: a spin (`Executed::spun`).
fn spin(w: &mut World, i: usize, cx: &mut Cx<'_>, addr: u32, value: u64) {
    cx.spun = cx.spin == Some((addr, value));
    w.threads[i].spin = Some((addr, value));
}

/// The trap of an access outside memory or misaligned, as wasm reports it.
fn trap(w: &World, i: usize, what: &str, addr: u32, width: u32) -> Outcome {
    Outcome::Fail(Failure::new(
        FailureKind::Trap,
        Some(w.thread_label(i)),
        format!("wasm trap: {what} (atomic access of {width} bytes at `{addr:#x}`)"),
    ))
}

/// The `width` bytes at `addr`, after the checks wasm makes.
fn load(w: &World, i: usize, cx: &Cx<'_>, addr: u32, width: u32) -> Result<u64, Outcome> {
    if !matches!(width, 1 | 2 | 4 | 8) || !addr.is_multiple_of(width) {
        return Err(trap(w, i, "unaligned atomic", addr, width));
    }
    let bytes = cx
        .mem
        .as_ref()
        .and_then(|m| m.bytes.get(addr as usize..addr as usize + width as usize));
    let Some(bytes) = bytes else {
        return Err(trap(w, i, "out of bounds memory access", addr, width));
    };
    let mut v = [0u8; 8];
    v[..width as usize].copy_from_slice(bytes);
    Ok(u64::from_le_bytes(v))
}

/// Stores the low `width` bytes of `v` at `addr` (checked by `load` first).
fn store(
    w: &World,
    i: usize,
    cx: &mut Cx<'_>,
    addr: u32,
    width: u32,
    v: u64,
) -> Result<(), Outcome> {
    load(w, i, cx, addr, width)?;
    let m = cx.mem.as_mut().expect("checked by load");
    put_guest_bytes(m.bytes, m.dirty, addr, &v.to_le_bytes()[..width as usize])
        .map_err(|_| trap(w, i, "out of bounds memory access", addr, width))
}

fn rmw(w: &World, i: usize, cx: &mut Cx<'_>, addr: u32, width: u32, op: u32, v: u64) -> Outcome {
    let old = match load(w, i, cx, addr, width) {
        Ok(old) => old,
        Err(f) => return f,
    };
    let new = match op {
        0 => old.wrapping_add(v),
        1 => old.wrapping_sub(v),
        2 => old & v,
        3 => old | v,
        4 => old ^ v,
        5 => v,
        _ => return w.misuse(i, format!("mem_rmw with unknown operation `{op}`")),
    } & mask(width);
    if let Err(f) = store(w, i, cx, addr, width, new) {
        return f;
    }
    if cx.tracing {
        cx.detail = format!(
            "{} {} -> {old} (now {new})",
            RMW_OPS[op as usize],
            v & mask(width)
        );
    }
    Outcome::Return(Ret::val(old))
}

fn cmpxchg(
    w: &mut World,
    i: usize,
    cx: &mut Cx<'_>,
    addr: u32,
    width: u32,
    expected: u64,
    new: u64,
) -> Outcome {
    let old = match load(w, i, cx, addr, width) {
        Ok(old) => old,
        Err(f) => return f,
    };
    let swapped = old == expected & mask(width);
    if swapped {
        if let Err(f) = store(w, i, cx, addr, width, new) {
            return f;
        }
    } else {
        // Failed: it only read.
        cx.accesses.clear();
        cx.accesses.push(Access::read(location(addr)));
        spin(w, i, cx, addr, old);
    }
    if cx.tracing {
        cx.detail = format!(
            "{} -> {} -> {old} ({})",
            expected & mask(width),
            new & mask(width),
            if swapped { "swapped" } else { "failed" }
        );
    }
    Outcome::Return(Ret::val(old))
}

fn wait(
    w: &mut World,
    i: usize,
    cx: &mut Cx<'_>,
    addr: u32,
    width: u32,
    expected: u64,
    timeout: i64,
) -> Outcome {
    let cur = match load(w, i, cx, addr, width) {
        Ok(v) => v,
        Err(f) => return f,
    };
    if cur != expected & mask(width) {
        if cx.tracing {
            cx.detail = format!("{cur} != {} (not equal)", expected & mask(width));
        }
        return Outcome::Return(Ret::val(WAIT_NOT_EQUAL));
    }
    if timeout == 0 {
        // Time passes while a thread waits, however briefly: a loop that
        // waits for what is left until a deadline gets past it (std's
        // `wait_timeout_while` waits 0 ns once the clock is at it).
        w.clock_ns = w.clock_ns.saturating_add(1);
        if cx.tracing {
            cx.detail = "timed out (timeout 0)".into();
        }
        return Outcome::Return(Ret::val(WAIT_TIMED_OUT));
    }
    w.threads[i].notified = false;
    // A timed wait that times out has waited its timeout: the clock
    // passes the deadline then, so a loop waiting for it ends.
    let deadline = match u64::try_from(timeout) {
        Ok(t) => w.clock_ns.saturating_add(t).min(NO_DEADLINE - 1),
        Err(_) => NO_DEADLINE,
    };
    let t = &mut w.threads[i];
    t.pending = Op::MemWake { addr, deadline };
    let me = t.tid;
    w.futex.entry(addr).or_default().push_back(me);
    if cx.tracing {
        cx.detail = format!("{cur}: waits");
    }
    Outcome::Continue
}

fn notify(w: &mut World, cx: &mut Cx<'_>, addr: u32, count: u32) -> Outcome {
    let queued = waiters(w, addr);
    let mut woken = Vec::new();
    if let Some(q) = w.futex.get_mut(&addr) {
        if count == 1 && queued > 1 {
            woken.extend(q.remove(cx.alt as usize));
        } else {
            let n = (count as usize).min(q.len());
            woken.extend(q.drain(..n));
        }
        if q.is_empty() {
            w.futex.remove(&addr);
        }
    }
    for t in &woken {
        if let Some(j) = w.thread_index(*t) {
            w.threads[j].notified = true;
        }
    }
    if cx.tracing {
        let names: Vec<String> = woken.iter().map(|t| w.thread_name(*t)).collect();
        cx.detail = match names.len() {
            0 => "-> 0 woken".into(),
            _ => format!("-> {} woken ({})", names.len(), names.join(", ")),
        };
    }
    Outcome::Return(Ret::val(woken.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn exec(w: &mut World, i: usize, op: Op, alt: u32, mem: &mut [u8]) -> Outcome {
        w.threads[i].pending = op;
        let mem = GuestMem {
            bytes: mem,
            dirty: None,
        };
        w.execute_mem(i, alt, None, true, &mut Vec::new(), Some(mem))
            .outcome
    }

    #[test]
    fn atomics_read_and_write_little_endian_memory() {
        let mut w = world2();
        let mut mem = vec![0u8; 64];
        let store = Op::MemStore {
            addr: 8,
            width: 4,
            v: 0x1_0000_0007,
        };
        ret(exec(&mut w, 0, store, 0, &mut mem));
        assert_eq!(&mem[8..13], &[7, 0, 0, 0, 0], "only the low 4 bytes");
        let add = Op::MemRmw {
            addr: 8,
            width: 4,
            op: 0,
            v: 3,
        };
        assert_eq!(ret(exec(&mut w, 1, add, 0, &mut mem)).val, 7);
        let cas = |expected| Op::MemCmpxchg {
            addr: 8,
            width: 4,
            expected,
            new: 1,
        };
        assert_eq!(ret(exec(&mut w, 0, cas(7), 0, &mut mem)).val, 10, "failed");
        assert_eq!(mem[8], 10);
        assert_eq!(ret(exec(&mut w, 0, cas(10), 0, &mut mem)).val, 10);
        let load = Op::MemLoad { addr: 8, width: 4 };
        assert_eq!(ret(exec(&mut w, 1, load, 0, &mut mem)).val, 1);
        let oob = Op::MemLoad { addr: 64, width: 4 };
        assert!(matches!(
            exec(&mut w, 1, oob, 0, &mut mem),
            Outcome::Fail(_)
        ));
        let unaligned = Op::MemLoad { addr: 6, width: 4 };
        assert!(matches!(
            exec(&mut w, 1, unaligned, 0, &mut mem),
            Outcome::Fail(_)
        ));
    }

    #[test]
    fn a_failed_compare_exchange_only_reads() {
        let mut w = world2();
        let mut mem = vec![0u8; 16];
        let cas = Op::MemCmpxchg {
            addr: 0,
            width: 8,
            expected: 5,
            new: 1,
        };
        w.threads[0].pending = cas;
        let mut acc = Vec::new();
        w.accesses(0, &mut acc);
        assert_eq!(acc, vec![Access::write(location(0))]);
        let mem = GuestMem {
            bytes: &mut mem,
            dirty: None,
        };
        w.execute_mem(0, 0, None, false, &mut acc, Some(mem));
        assert_eq!(acc, vec![Access::read(location(0))]);
    }

    #[test]
    fn wait_blocks_until_a_notify_wakes_the_chosen_waiter() {
        let mut w = world2();
        w.spawn_child(0, 8, 2, 0);
        let mut mem = vec![0u8; 16];
        let wait = |expected| Op::MemWait {
            addr: 4,
            width: 4,
            expected,
            timeout: -1,
        };
        // A different value returns "not equal" at once.
        assert_eq!(ret(exec(&mut w, 1, wait(9), 0, &mut mem)).val, 1);
        // Equal: both children wait.
        assert!(matches!(
            exec(&mut w, 1, wait(0), 0, &mut mem),
            Outcome::Continue
        ));
        assert!(matches!(
            exec(&mut w, 2, wait(0), 0, &mut mem),
            Outcome::Continue
        ));
        assert!(!w.enabled(1) && !w.enabled(2));
        w.threads[0].pending = Op::MemNotify { addr: 4, count: 1 };
        assert_eq!(w.alts(0), 2, "which waiter wakes is a choice");
        let notify = Op::MemNotify { addr: 4, count: 1 };
        assert_eq!(ret(exec(&mut w, 0, notify.clone(), 1, &mut mem)).val, 1);
        assert!(
            !w.enabled(1) && w.enabled(2),
            "alternative 1 woke the second"
        );
        let wake = w.threads[2].pending.clone();
        assert_eq!(ret(exec(&mut w, 2, wake, 0, &mut mem)).val, 0);
        let all = Op::MemNotify {
            addr: 4,
            count: u32::MAX,
        };
        assert_eq!(ret(exec(&mut w, 0, all.clone(), 0, &mut mem)).val, 1);
        assert!(w.enabled(1));
        assert_eq!(ret(exec(&mut w, 0, all, 0, &mut mem)).val, 0, "none left");
        assert!(w.futex.is_empty());
    }

    #[test]
    fn reading_the_same_again_is_a_spin_and_anything_else_ends_it() {
        let mut w = world2();
        let mut mem = vec![0u8; 16];
        let load = || Op::MemLoad { addr: 8, width: 4 };
        let spun = |w: &mut World, op: Op, mem: &mut [u8]| {
            w.threads[1].pending = op;
            let mem = GuestMem {
                bytes: mem,
                dirty: None,
            };
            w.execute_mem(1, 0, None, false, &mut Vec::new(), Some(mem))
                .spun
        };
        assert!(!spun(&mut w, load(), &mut mem), "a first load");
        assert!(spun(&mut w, load(), &mut mem), "the same value again");
        mem[8] = 1;
        assert!(!spun(&mut w, load(), &mut mem), "another value");
        let store = Op::MemStore {
            addr: 0,
            width: 4,
            v: 0,
        };
        assert!(!spun(&mut w, store, &mut mem));
        assert!(!spun(&mut w, load(), &mut mem), "a store in between");
        let cas = || Op::MemCmpxchg {
            addr: 8,
            width: 4,
            expected: 0,
            new: 2,
        };
        assert!(
            spun(&mut w, cas(), &mut mem),
            "a failed compare-exchange reads 1 again"
        );
        assert!(spun(&mut w, cas(), &mut mem));
    }

    #[test]
    fn a_timed_wait_may_time_out_and_leaves_the_queue() {
        let mut w = world2();
        let mut mem = vec![0u8; 16];
        let wait = Op::MemWait {
            addr: 0,
            width: 4,
            expected: 0,
            timeout: 1_000,
        };
        assert!(matches!(
            exec(&mut w, 1, wait, 0, &mut mem),
            Outcome::Continue
        ));
        assert!(w.enabled(1), "timing out is always possible");
        let wake = w.threads[1].pending.clone();
        assert_eq!(ret(exec(&mut w, 1, wake, 0, &mut mem)).val, 2);
        assert!(w.futex.is_empty());
        // The clock passed the deadline: a loop waiting for it ends.
        assert_eq!(w.clock_ns, 1_001);
    }
}
