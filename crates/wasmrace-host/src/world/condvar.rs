//! Condition variables: `condvar.wait` releases the mutex (which the
//! caller must hold) and leaves the thread waiting with `CondvarWake`
//! pending, enabled once a notification woke it and the mutex is free;
//! `notify_one` wakes the waiter its alternative picks (an explored
//! choice), `notify_all` every waiter. No spurious wakeups.

use super::mutex::Mutex;
use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use std::collections::VecDeque;
use wasmrace_trace::{Access, Oid, Tid};

/// A condition variable's waiters, in wait order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Condvar {
    pub waiters: VecDeque<Tid>,
}

impl ObjectState for Condvar {
    fn describe(&self, w: &World, _h: u64) -> String {
        let waiters: Vec<String> = self.waiters.iter().map(|t| w.thread_name(*t)).collect();
        if waiters.is_empty() {
            "no waiters".into()
        } else {
            super::text::with_list(String::new(), "waiters", &waiters)
        }
    }

    fn heap_bytes(&self) -> usize {
        self.waiters.capacity() * std::mem::size_of::<Tid>()
    }
}

pub(super) struct Ops;

impl Kind for Ops {
    fn enabled(w: &World, i: usize, op: &Op) -> bool {
        match op {
            Op::CondvarWake { m, .. } => w.threads[i].notified && w.mutex_free(*m),
            _ => true,
        }
    }

    fn alts(w: &World, _i: usize, op: &Op) -> u32 {
        match op {
            Op::NotifyOne { cv } => w
                .object::<Condvar>(*cv)
                .map_or(1, |c| (c.waiters.len() as u32).max(1)),
            _ => 1,
        }
    }

    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::CondvarWait { cv, m } | Op::CondvarWake { cv, m } => {
                out.push(Access::sync(Oid(*cv)));
                out.push(Access::sync(Oid(*m)));
            }
            Op::NotifyOne { cv } | Op::NotifyAll { cv } => out.push(Access::sync(Oid(*cv))),
            _ => {}
        }
    }

    fn waits_for(w: &World, i: usize, op: &Op) -> String {
        match op {
            Op::CondvarWake { cv, m } => {
                if w.threads[i].notified {
                    format!("`{}` to re-acquire after a notification", w.object_name(*m))
                } else {
                    format!("a notification on `{}`", w.object_name(*cv))
                }
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::CondvarWait { cv, .. }
            | Op::CondvarWake { cv, .. }
            | Op::NotifyOne { cv }
            | Op::NotifyAll { cv } => Some(w.object_name(*cv)),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::CondvarNew => {
                let h = w.new_object(
                    i,
                    Object::Condvar(Condvar {
                        waiters: VecDeque::new(),
                    }),
                );
                if cx.tracing {
                    cx.detail = format!("-> {}", w.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::CondvarWait { cv, m } => wait(w, i, cv, m, cx),
            Op::CondvarWake { m, .. } => {
                let me = w.threads[i].tid;
                if let Some(mx) = w.object_mut::<Mutex>(m) {
                    mx.holder = Some(me);
                }
                w.threads[i].notified = false;
                if cx.tracing {
                    cx.detail = format!("re-acquires {}", w.object_name(m));
                }
                Outcome::Return(Ret::unit())
            }
            Op::NotifyOne { cv } => notify_one(w, i, cv, cx),
            Op::NotifyAll { cv } => notify_all(w, i, cv, cx),
            _ => unreachable!("not a condvar operation"),
        }
    }
}

fn wait(w: &mut World, i: usize, cv: u64, m: u64, cx: &mut Cx<'_>) -> Outcome {
    let me = w.threads[i].tid;
    let held = w.object::<Mutex>(m).is_some_and(|mx| mx.holder == Some(me));
    if w.object::<Condvar>(cv).is_none() {
        return w.misuse(
            i,
            format!(
                "condvar.wait on `{}`, which is not a condvar",
                w.object_name(cv)
            ),
        );
    }
    if !held {
        return w.misuse(
            i,
            format!(
                "condvar.wait with `{}`, which this thread does not hold",
                w.object_name(m)
            ),
        );
    }
    if let Some(mx) = w.object_mut::<Mutex>(m) {
        mx.holder = None;
    }
    if let Some(c) = w.object_mut::<Condvar>(cv) {
        c.waiters.push_back(me);
    }
    let t = &mut w.threads[i];
    t.notified = false;
    t.pending = Op::CondvarWake { cv, m };
    if cx.tracing {
        cx.detail = format!("releases {}", w.object_name(m));
    }
    Outcome::Continue
}

fn notify_one(w: &mut World, i: usize, cv: u64, cx: &mut Cx<'_>) -> Outcome {
    let alt = cx.alt as usize;
    let Some(c) = w.object_mut::<Condvar>(cv) else {
        return w.misuse(
            i,
            format!(
                "condvar.notify_one on `{}`, which is not a condvar",
                w.object_name(cv)
            ),
        );
    };
    let woken = if c.waiters.is_empty() {
        None
    } else {
        c.waiters.remove(alt)
    };
    match woken {
        Some(t) => {
            if let Some(j) = w.thread_index(t) {
                w.threads[j].notified = true;
            }
            if cx.tracing {
                cx.detail = format!("wakes {}", w.thread_name(t));
            }
        }
        None if cx.tracing => cx.detail = "no waiter".into(),
        None => {}
    }
    Outcome::Return(Ret::unit())
}

fn notify_all(w: &mut World, i: usize, cv: u64, cx: &mut Cx<'_>) -> Outcome {
    let Some(c) = w.object_mut::<Condvar>(cv) else {
        return w.misuse(
            i,
            format!(
                "condvar.notify_all on `{}`, which is not a condvar",
                w.object_name(cv)
            ),
        );
    };
    let woken = std::mem::take(&mut c.waiters);
    for t in &woken {
        if let Some(j) = w.thread_index(*t) {
            w.threads[j].notified = true;
        }
    }
    if cx.tracing {
        let names: Vec<String> = woken.iter().map(|t| w.thread_name(*t)).collect();
        cx.detail = format!("wakes [{}]", names.join(", "));
    }
    Outcome::Return(Ret::unit())
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn condvar_wait_notify_one_picks_waiter_by_alt() {
        let mut w = world2();
        w.spawn_child(0, 8, 2, 0);
        let m = ret(run(&mut w, 0, Op::MutexNew)).val as u64;
        let cv = ret(run(&mut w, 0, Op::CondvarNew)).val as u64;
        for i in [1, 2] {
            ret(run(&mut w, i, Op::MutexLock { h: m }));
            assert!(matches!(
                run(&mut w, i, Op::CondvarWait { cv, m }),
                Outcome::Continue
            ));
            assert!(!w.enabled(i));
        }
        w.threads[0].pending = Op::NotifyOne { cv };
        assert_eq!(w.alts(0), 2);
        w.execute(0, 1, None, false, &mut Vec::new());
        assert!(!w.enabled(1));
        assert!(w.enabled(2), "alt 1 wakes the second waiter");
        ret(w.execute(2, 0, None, false, &mut Vec::new()).outcome);
        assert!(!w.enabled(1));
    }
}
