//! Threads' own operations: the start placeholder, `spawn`, `join`,
//! `yield_now`, the exit step, `choose`, `phase` and the end of a std
//! guest's process. The thread table itself
//! is `World`'s (`mod.rs`).

use super::registry::name_slot;
use super::text::fmt_name;
use super::{Cx, Kind, Outcome, Ret, World, NO_PARENT};
use crate::ops::Op;
use wasmrace_trace::{Access, Failure, FailureKind, Oid, ThreadPath, Tid, Waiting};

pub(super) struct Ops;

/// Thread `i` as traces show it: exited, ready (with its next operation)
/// or blocked (with what it waits for), and its registered name.
pub(super) fn describe(w: &World, i: usize) -> String {
    let t = &w.threads[i];
    let mut s = if t.exited {
        "exited".to_string()
    } else if w.enabled(i) {
        format!("ready: next {}", t.pending.kind().name())
    } else {
        format!("blocked: waits for {}", w.waits_for(i))
    };
    if let Some(name) = &t.name {
        s.push_str(&format!(", registered as {}", fmt_name(name)));
    }
    s
}

/// The most alternatives one `choose(n)` may ask for (docs/ABI.md). Every
/// alternative is a branch strategies may enumerate (DFS keeps them all as
/// pending decisions), so a value as large as `choose(-1)` reinterpreted,
/// 2^32 - 1, would exhaust the host's memory; past this limit the call is
/// API misuse instead.
pub const MAX_CHOOSE: u32 = 1 << 16;

/// Whether `choose(n)` is within the host's limits.
fn choose_ok(n: u32) -> bool {
    (1..=MAX_CHOOSE).contains(&n)
}

impl Kind for Ops {
    fn enabled(w: &World, _i: usize, op: &Op) -> bool {
        match op {
            Op::Join { target } => !w.alive(Tid(*target)),
            _ => true,
        }
    }

    fn alts(_w: &World, _i: usize, op: &Op) -> u32 {
        match op {
            // A misused `choose` has one alternative: the step that fails.
            Op::Choose { n } if choose_ok(*n) => *n,
            _ => 1,
        }
    }

    fn accesses(w: &World, i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::Join { target } => out.push(Access::sync(Oid::liveness(Tid(*target)))),
            Op::ProcExit { .. } => out.push(Access::write(Oid::process())),
            Op::Exit => {
                let t = &w.threads[i];
                out.push(Access::write(Oid::liveness(t.tid)));
                out.push(Access::write(name_slot(t.tid)));
                if let Some(n) = &t.name {
                    out.push(Access::write(Oid::name(n)));
                }
            }
            _ => {}
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::Join { target } => {
                format!("thread `{}` to exit (join)", w.thread_name(Tid(*target)))
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::Join { target } => Some(format!("thread {}", w.thread_name(Tid(*target)))),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::Spawn { .. } => {
                let child = cx.spawned.expect("spawn executed with a child");
                if cx.tracing {
                    cx.detail = format!("-> {}", w.thread_name(child));
                }
                Outcome::Return(Ret::val(child.0))
            }
            Op::Join { target } => {
                if w.thread_index(Tid(target)).is_none() {
                    w.misuse(i, format!("join on unknown thread id `{target:#x}`"))
                } else {
                    Outcome::Return(Ret::unit())
                }
            }
            Op::Phase { name } => {
                if cx.tracing {
                    cx.detail = fmt_name(&name);
                }
                Outcome::Return(Ret::unit())
            }
            Op::Exit => {
                let t = &mut w.threads[i];
                t.exited = true;
                if let Some(n) = t.name.take() {
                    w.names.remove(&n);
                    w.held -= super::NAME_BYTES + n.len() as u64;
                }
                Outcome::Exited
            }
            Op::ProcExit { code } => {
                w.end_process();
                if cx.tracing {
                    cx.detail = format!("code {code}");
                }
                if code == 0 {
                    return Outcome::Exited;
                }
                Outcome::Fail(Failure::new(
                    FailureKind::Exit,
                    Some(w.thread_label(i)),
                    format!("the process exited with code {code}"),
                ))
            }
            Op::Choose { n } => {
                if n == 0 {
                    w.misuse(i, "choose(0): there is no value in 0..0".into())
                } else if !choose_ok(n) {
                    w.misuse(
                        i,
                        format!(
                            "choose(`{n}`) asks for more than the host's limit of `{MAX_CHOOSE}` alternatives \
                             (an `i32` below 0 reads as a `u32` above `i32::MAX`)"
                        ),
                    )
                } else {
                    if cx.tracing {
                        cx.detail = format!("{n} -> {}", cx.alt);
                    }
                    Outcome::Return(Ret::val(u64::from(cx.alt)))
                }
            }
            // `Start`, `Yield`: nothing to do.
            _ => Outcome::Return(Ret::unit()),
        }
    }
}

/// Threads' names: their spawn paths, rendered on demand.
impl World {
    /// The failure of every live thread blocked, each with what it
    /// waits for.
    pub fn deadlock(&self) -> Failure {
        let waiting: Vec<Waiting> = self
            .threads
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.exited)
            .map(|(i, _)| Waiting {
                thread: self.thread_label(i),
                waits_for: self.waits_for(i),
            })
            .collect();
        let mut f = Failure::new(
            FailureKind::Deadlock,
            None,
            format!(
                "every live thread is blocked ({} thread{})",
                waiting.len(),
                if waiting.len() == 1 { "" } else { "s" }
            ),
        );
        f.waiting = waiting;
        f
    }

    /// The spawn path of thread `i`, walked up through its parents.
    pub fn thread_path(&self, mut i: usize) -> ThreadPath {
        let mut v = Vec::new();
        while let Some(t) = self.threads.get(i).filter(|t| t.parent != NO_PARENT) {
            v.push(t.index);
            i = t.parent as usize;
        }
        v.reverse();
        ThreadPath(v)
    }

    /// Thread `i`'s name in reports, traces and schedule files: its path in
    /// the compact form (`main.1*8000`), short for deep chains.
    pub fn thread_label(&self, i: usize) -> String {
        self.thread_path(i).compact()
    }

    /// A thread's name in reports, traces and schedule files (see
    /// `thread_label`).
    pub fn thread_name(&self, tid: Tid) -> String {
        match self.thread_index(tid) {
            Some(i) => self.thread_label(i),
            None => format!("<unknown thread {:#x}>", tid.0),
        }
    }

    /// A thread's name as the guest sees it (`ThreadId`'s `Display`): the
    /// full path, `main.1.1.1`, whatever its depth (the guest's own buffer
    /// holds it, never the host for longer than the hook call).
    pub fn thread_full_name(&self, tid: Tid) -> String {
        match self.thread_index(tid) {
            Some(i) => self.thread_path(i).to_string(),
            None => format!("<unknown thread {:#x}>", tid.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    /// `choose(-1)` through the raw hook once made DFS allocate 34 GB for
    /// 2^32 - 1 alternatives and abort the host.
    #[test]
    fn choose_outside_the_limit_is_misuse_with_one_alternative() {
        for n in [0, MAX_CHOOSE + 1, i32::MAX as u32, u32::MAX] {
            let mut w = world2();
            w.threads[0].pending = Op::Choose { n };
            assert_eq!(w.alts(0), 1, "choose({n})");
            match run(&mut w, 0, Op::Choose { n }) {
                Outcome::Fail(f) => assert_eq!(f.kind, FailureKind::Misuse, "choose({n})"),
                _ => panic!("choose({n}) must be api misuse"),
            }
        }
        let mut w = world2();
        w.threads[0].pending = Op::Choose { n: MAX_CHOOSE };
        assert_eq!(w.alts(0), MAX_CHOOSE);
        assert_eq!(ret(run(&mut w, 0, Op::Choose { n: MAX_CHOOSE })).val, 0);
    }
}
