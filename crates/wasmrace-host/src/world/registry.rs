//! The registry: names for threads, with Erlang's rules (`register` fails
//! if the name is taken, the thread is not alive or already has a name;
//! an exit drops the thread's name). Each name is an object id, and so is
//! "the name thread `t` is registered under", so that two registrations of
//! one thread conflict.

use super::text::fmt_name;
use super::{Cx, Kind, Outcome, Ret, World, NAME_BYTES};
use crate::ops::Op;
use wasmrace_trace::{Access, Oid, Tid};

/// The id of the name thread `t` is registered under: the thread's
/// liveness, so that an exit touches one object unless the thread has a
/// name (`dpor --dpor trust` places steps over one object only). A
/// coarser dependence than a slot of its own (an unregister conflicts
/// with a join of its owner), and still sound.
pub(super) fn name_slot(t: Tid) -> Oid {
    Oid::liveness(t)
}

pub(super) struct Ops;

/// Registry name `name` as traces show it: whom it names.
pub(super) fn describe(w: &World, name: &[u8]) -> String {
    match w.names.get(name) {
        Some(t) => format!("names {}", w.thread_name(*t)),
        None => "unregistered".into(),
    }
}

impl Kind for Ops {
    fn accesses(w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::Register { name, tid } => {
                out.push(Access::write(Oid::name(name)));
                out.push(Access::read(Oid::liveness(Tid(*tid))));
                out.push(Access::write(name_slot(Tid(*tid))));
            }
            Op::Whereis { name, .. } => out.push(Access::read(Oid::name(name))),
            Op::Unregister { name } => {
                out.push(Access::write(Oid::name(name)));
                if let Some(owner) = w.names.get(&**name) {
                    out.push(Access::write(name_slot(*owner)));
                }
            }
            _ => {}
        }
    }

    fn object(_w: &World, _i: usize, op: &Op) -> Option<String> {
        match op {
            Op::Register { name, .. } | Op::Whereis { name, .. } | Op::Unregister { name } => {
                Some(format!("name {}", fmt_name(name)))
            }
            _ => None,
        }
    }

    fn execute(w: &mut World, _i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::Register { name, tid } => register(w, name, Tid(tid), cx),
            Op::Whereis { name, out } => {
                let v = w.names.get(&*name).map(|t| t.0);
                if cx.tracing {
                    cx.detail = format!(
                        "-> {}",
                        v.map(|t| w.thread_name(Tid(t)))
                            .unwrap_or_else(|| "none".into())
                    );
                }
                Outcome::Return(Ret::opt(out, v))
            }
            Op::Unregister { name } => {
                let removed = w.names.remove(&*name);
                if let Some(j) = removed.and_then(|t| w.thread_index(t)) {
                    w.threads[j].name = None;
                    w.held -= NAME_BYTES + name.len() as u64;
                }
                if cx.tracing {
                    cx.detail = format!("-> {}", removed.is_some());
                }
                Outcome::Return(Ret::val(u64::from(removed.is_some())))
            }
            _ => unreachable!("not a registry operation"),
        }
    }
}

/// `register`: 0 ok; 1 name taken; 2 thread not alive; 3 thread already
/// registered.
fn register(w: &mut World, name: crate::ops::Bytes, target: Tid, cx: &mut Cx<'_>) -> Outcome {
    let code = if w.names.contains_key(&*name) {
        1
    } else if !w.alive(target) {
        2
    } else {
        let j = w.thread_index(target).expect("alive");
        if w.threads[j].name.is_some() {
            3
        } else {
            // One copy, shared by the thread, the registry and the
            // operation that named it.
            w.held += NAME_BYTES + name.len() as u64;
            w.threads[j].name = Some(name.clone());
            w.names.insert(name, target);
            0
        }
    };
    if cx.tracing {
        cx.detail = format!(
            "{} -> {}",
            w.thread_name(target),
            [
                "ok",
                "error: name taken",
                "error: thread not alive",
                "error: thread already registered"
            ][code as usize]
        );
    }
    Outcome::Return(Ret::val(code))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn registry_follows_erlang_rules() {
        let mut w = world2();
        let child = w.threads[1].tid.0;
        let reg = |w: &mut World, name: &[u8], tid| {
            ret(run(
                w,
                0,
                Op::Register {
                    name: name.into(),
                    tid,
                },
            ))
            .val
        };
        assert_eq!(reg(&mut w, b"p", child), 0);
        assert_eq!(reg(&mut w, b"p", 0), 1);
        assert_eq!(reg(&mut w, b"q", child), 3);
        let r = ret(run(
            &mut w,
            0,
            Op::Whereis {
                name: b"p".as_slice().into(),
                out: 64,
            },
        ));
        assert_eq!(
            r,
            Ret {
                val: 1,
                out: Some((64, child))
            }
        );
        assert!(matches!(run(&mut w, 1, Op::Exit), Outcome::Exited));
        assert_eq!(
            ret(run(
                &mut w,
                0,
                Op::Whereis {
                    name: b"p".as_slice().into(),
                    out: 64
                }
            ))
            .val,
            0,
            "exit unregisters"
        );
        assert_eq!(reg(&mut w, b"r", child), 2);
    }
}
