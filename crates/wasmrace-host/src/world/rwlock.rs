//! Read-write locks: any number of readers or one writer. `rwlock.read` is
//! enabled while nobody holds the lock for writing, `rwlock.write` while
//! nobody holds it at all (blocking avoidance, as for mutexes); releasing a
//! mode the thread does not hold is misuse. Read acquisitions and releases
//! are shared syncs: two readers commute, a reader and a writer do not.

use super::{Cx, Kind, Object, ObjectState, Outcome, Ret, World};
use crate::ops::Op;
use std::collections::BTreeMap;
use wasmrace_trace::{Access, Oid, Tid};

/// Who holds a read-write lock: the writer, or the readers with how many
/// read guards each holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RwLock {
    pub writer: Option<Tid>,
    pub readers: BTreeMap<Tid, u32>,
}

impl ObjectState for RwLock {
    fn describe(&self, w: &World, h: u64) -> String {
        let held = match self.writer {
            Some(t) => format!("written by {}", w.thread_name(t)),
            None if self.readers.is_empty() => "free".into(),
            None => {
                let readers: Vec<String> = self
                    .readers
                    .iter()
                    .map(|(t, n)| match n {
                        1 => w.thread_name(*t),
                        n => format!("{} (x{n})", w.thread_name(*t)),
                    })
                    .collect();
                super::text::with_list(String::new(), "read by", &readers)
            }
        };
        let waiting = w.threads_waiting(
            |op| matches!(op, Op::RwLockRead { h: x } | Op::RwLockWrite { h: x } if *x == h),
        );
        super::text::with_list(held, "waiting", &waiting)
    }

    fn heap_bytes(&self) -> usize {
        super::btree_bytes(self.readers.len(), std::mem::size_of::<(Tid, u32)>())
    }
}

pub(super) struct Ops;

/// The lock an operation works on (`None` for `rwlock.new`).
fn handle(op: &Op) -> Option<u64> {
    match op {
        Op::RwLockRead { h }
        | Op::RwLockWrite { h }
        | Op::RwLockReadUnlock { h }
        | Op::RwLockWriteUnlock { h } => Some(*h),
        _ => None,
    }
}

impl Kind for Ops {
    fn enabled(w: &World, _i: usize, op: &Op) -> bool {
        // An unknown handle runs, to fail as misuse.
        match op {
            Op::RwLockRead { h } => w.object::<RwLock>(*h).is_none_or(|l| l.writer.is_none()),
            Op::RwLockWrite { h } => w
                .object::<RwLock>(*h)
                .is_none_or(|l| l.writer.is_none() && l.readers.is_empty()),
            _ => true,
        }
    }

    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::RwLockRead { h } | Op::RwLockReadUnlock { h } => {
                out.push(Access::shared_sync(Oid(*h)))
            }
            Op::RwLockWrite { h } | Op::RwLockWriteUnlock { h } => out.push(Access::sync(Oid(*h))),
            _ => {}
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        let (Op::RwLockRead { h } | Op::RwLockWrite { h }) = op else {
            return format!("{} (not blocking)", op.kind().name());
        };
        let holders = match w.object::<RwLock>(*h) {
            Some(RwLock {
                writer: Some(t), ..
            }) => format!("write-locked by `{}`", w.thread_name(*t)),
            Some(l) if !l.readers.is_empty() => {
                let names: Vec<String> = l
                    .readers
                    .keys()
                    .map(|t| format!("`{}`", w.thread_name(*t)))
                    .collect();
                format!("read-locked by {}", names.join(", "))
            }
            _ => "held by nobody".into(),
        };
        format!("`{}` {holders}", w.object_name(*h))
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        handle(op).map(|h| w.object_name(h))
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        if let Op::RwLockNew = op {
            let h = w.new_object(i, Object::RwLock(RwLock::default()));
            if cx.tracing {
                cx.detail = format!("-> {}", w.object_name(h));
            }
            return Outcome::Return(Ret::val(h));
        }
        let h = handle(&op).expect("an rwlock operation");
        let me = w.threads[i].tid;
        let name = op.kind().name();
        let Some(l) = w.object_mut::<RwLock>(h) else {
            return w.misuse(
                i,
                format!("{name} on `{}`, which is not an rwlock", w.object_name(h)),
            );
        };
        let held = match op {
            Op::RwLockRead { .. } => {
                *l.readers.entry(me).or_insert(0) += 1;
                true
            }
            Op::RwLockWrite { .. } => {
                l.writer = Some(me);
                true
            }
            Op::RwLockReadUnlock { .. } => match l.readers.get_mut(&me) {
                Some(n) => {
                    *n -= 1;
                    if *n == 0 {
                        l.readers.remove(&me);
                    }
                    true
                }
                None => false,
            },
            Op::RwLockWriteUnlock { .. } => {
                let ok = l.writer == Some(me);
                if ok {
                    l.writer = None;
                }
                ok
            }
            _ => unreachable!("not an rwlock operation"),
        };
        if !held {
            let mode = if name.contains("read") {
                "for reading"
            } else {
                "for writing"
            };
            return w.misuse(
                i,
                format!(
                    "{name} of `{}`, which this thread does not hold {mode}",
                    w.object_name(h)
                ),
            );
        }
        Outcome::Return(Ret::unit())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use wasmrace_trace::FailureKind;

    #[test]
    fn readers_share_and_a_writer_excludes() {
        let mut w = world2();
        w.spawn_child(0, 8, 2, 0);
        let l = ret(run(&mut w, 0, Op::RwLockNew)).val as u64;
        ret(run(&mut w, 1, Op::RwLockRead { h: l }));
        w.threads[2].pending = Op::RwLockRead { h: l };
        assert!(w.enabled(2), "a second reader gets in");
        w.threads[0].pending = Op::RwLockWrite { h: l };
        assert!(!w.enabled(0), "a writer waits for the reader");
        assert!(
            w.waits_for(0).contains("read-locked by `main.1`"),
            "{}",
            w.waits_for(0)
        );
        ret(run(&mut w, 1, Op::RwLockReadUnlock { h: l }));
        w.threads[0].pending = Op::RwLockWrite { h: l };
        assert!(w.enabled(0));
        ret(w.execute(0, 0, None, false, &mut Vec::new()).outcome);
        w.threads[2].pending = Op::RwLockRead { h: l };
        assert!(!w.enabled(2), "a reader waits for the writer");
        assert!(w.waits_for(2).contains("write-locked by `main`"));
        assert!(matches!(
            run(&mut w, 1, Op::RwLockWriteUnlock { h: l }),
            Outcome::Fail(f) if f.kind == FailureKind::Misuse
        ));
        ret(run(&mut w, 0, Op::RwLockWriteUnlock { h: l }));
        w.threads[2].pending = Op::RwLockRead { h: l };
        assert!(w.enabled(2));
    }

    #[test]
    fn two_reads_are_independent_a_read_and_a_write_are_not() {
        let mut w = world2();
        let l = ret(run(&mut w, 0, Op::RwLockNew)).val as u64;
        let acc = |w: &mut World, i: usize, op: Op| {
            w.threads[i].pending = op;
            let mut a = Vec::new();
            w.accesses(i, &mut a);
            a
        };
        let r0 = acc(&mut w, 0, Op::RwLockRead { h: l });
        let r1 = acc(&mut w, 1, Op::RwLockRead { h: l });
        let u1 = acc(&mut w, 1, Op::RwLockReadUnlock { h: l });
        let w1 = acc(&mut w, 1, Op::RwLockWrite { h: l });
        assert!(!r0[0].conflicts(&r1[0]));
        assert!(!r0[0].conflicts(&u1[0]));
        assert!(r0[0].conflicts(&w1[0]));
    }
}
