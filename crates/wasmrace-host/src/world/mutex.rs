//! Mutexes: `mutex.lock` is enabled only while nobody holds the mutex (a
//! thread is never scheduled onto a lock that would block: blocking
//! avoidance), `mutex.unlock` by a thread that does not hold it is misuse.
//! Condition variables release and re-acquire them (`condvar.rs`).

use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid, Tid};

/// A mutex's holder.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mutex {
    pub holder: Option<Tid>,
}

impl ObjectState for Mutex {
    fn describe(&self, w: &World, h: u64) -> String {
        let holder = match self.holder {
            Some(t) => format!("held by {}", w.thread_name(t)),
            None => "free".into(),
        };
        let waiting = w.threads_waiting(|op| matches!(op, Op::MutexLock { h: x } if *x == h));
        super::text::with_list(holder, "waiting", &waiting)
    }
}

impl World {
    /// Whether mutex `h` can be taken now; an unknown handle can (the
    /// operation then fails as misuse).
    pub(super) fn mutex_free(&self, h: u64) -> bool {
        self.object::<Mutex>(h).is_none_or(|m| m.holder.is_none())
    }

    /// Who holds mutex `h`, for deadlock reports.
    pub(super) fn mutex_holder(&self, h: u64) -> String {
        match self.object::<Mutex>(h).and_then(|m| m.holder) {
            Some(t) => self.thread_name(t),
            None => "nobody".into(),
        }
    }
}

pub(super) struct Ops;

impl Kind for Ops {
    fn enabled(w: &World, _i: usize, op: &Op) -> bool {
        match op {
            Op::MutexLock { h } => w.mutex_free(*h),
            _ => true,
        }
    }

    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::MutexLock { h } | Op::MutexUnlock { h } => out.push(Access::sync(Oid(*h))),
            _ => {}
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::MutexLock { h } => {
                format!("`{}` held by `{}`", w.object_name(*h), w.mutex_holder(*h))
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::MutexLock { h } | Op::MutexUnlock { h } => Some(w.object_name(*h)),
            _ => None,
        }
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        let me = w.threads[i].tid;
        match op {
            Op::MutexNew => {
                let h = w.new_object(i, Object::Mutex(Mutex { holder: None }));
                if cx.tracing {
                    cx.detail = format!("-> {}", w.object_name(h));
                }
                Outcome::Return(Ret::val(h))
            }
            Op::MutexLock { h } => match w.object_mut::<Mutex>(h) {
                Some(m) => {
                    m.holder = Some(me);
                    Outcome::Return(Ret::unit())
                }
                None => w.misuse(
                    i,
                    format!("mutex.lock on `{}`, which is not a mutex", w.object_name(h)),
                ),
            },
            Op::MutexUnlock { h } => match w.object_mut::<Mutex>(h) {
                Some(m) if m.holder == Some(me) => {
                    m.holder = None;
                    Outcome::Return(Ret::unit())
                }
                Some(_) => w.misuse(
                    i,
                    format!(
                        "mutex.unlock of `{}`, which this thread does not hold",
                        w.object_name(h)
                    ),
                ),
                None => w.misuse(
                    i,
                    format!(
                        "mutex.unlock on `{}`, which is not a mutex",
                        w.object_name(h)
                    ),
                ),
            },
            _ => unreachable!("not a mutex operation"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use wasmrace_trace::FailureKind;

    #[test]
    fn mutex_blocks_and_unlock_by_other_is_misuse() {
        let mut w = world2();
        let m = ret(run(&mut w, 0, Op::MutexNew)).val as u64;
        ret(run(&mut w, 0, Op::MutexLock { h: m }));
        w.threads[1].pending = Op::MutexLock { h: m };
        assert!(!w.enabled(1));
        assert!(
            w.waits_for(1).contains("held by `main`"),
            "{}",
            w.waits_for(1)
        );
        assert!(
            matches!(run(&mut w, 1, Op::MutexUnlock { h: m }), Outcome::Fail(f) if f.kind == FailureKind::Misuse)
        );
        ret(run(&mut w, 0, Op::MutexUnlock { h: m }));
        w.threads[1].pending = Op::MutexLock { h: m };
        assert!(w.enabled(1));
    }
}
