//! Mailboxes: every thread has one; `send` appends (Erlang semantics: a
//! message to an exited thread is dropped), `recv` takes the oldest
//! message, `recv_from` the oldest from one sender (selective receive).
//! The taken message waits in the thread for `recv_take` (a plain hook).

use super::text::{preview, preview_n, with_list, LIST_ITEMS};
use super::{Cx, Kind, Message, Outcome, Ret, World, MESSAGE_BYTES};
use crate::ops::{Bytes, Op};
use std::fmt::Write as _;
use wasmrace_trace::{Access, Oid, Tid};

pub(super) struct Ops;

/// Bytes of each message a mailbox's description previews.
const MESSAGE_PREVIEW: usize = 16;

/// Thread `i`'s mailbox as traces show it: how many messages, then the
/// oldest few, each with its length, a clipped preview and its sender.
pub(super) fn describe(w: &World, i: usize) -> String {
    let mailbox = &w.threads[i].mailbox;
    let n = mailbox.len();
    let head = match n {
        0 => return "empty".into(),
        1 => "1 message".to_string(),
        n => format!("{n} messages"),
    };
    let messages: Vec<String> = mailbox
        .iter()
        .take(LIST_ITEMS + 1)
        .map(|m| {
            format!(
                "{} bytes {} from {}",
                m.data.len(),
                preview_n(&m.data, MESSAGE_PREVIEW),
                w.thread_name(m.from)
            )
        })
        .collect();
    with_list(head, "", &messages)
}

impl Kind for Ops {
    fn enabled(w: &World, i: usize, op: &Op) -> bool {
        let t = &w.threads[i];
        match op {
            Op::Recv => !t.mailbox.is_empty(),
            Op::RecvFrom { from } => t.mailbox.iter().any(|m| m.from.0 == *from),
            _ => true,
        }
    }

    fn accesses(w: &World, i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::Send { to, .. } => out.push(Access::write(Oid::mailbox(Tid(*to)))),
            _ => out.push(Access::write(Oid::mailbox(w.threads[i].tid))),
        }
    }

    fn waits_for(w: &World, _i: usize, op: &Op) -> String {
        match op {
            Op::Recv => "a message (recv on an empty mailbox)".into(),
            Op::RecvFrom { from } => {
                format!("a message from `{}` (recv_from)", w.thread_name(Tid(*from)))
            }
            op => format!("{} (not blocking)", op.kind().name()),
        }
    }

    fn object(w: &World, i: usize, op: &Op) -> Option<String> {
        Some(match op {
            Op::Send { to, .. } => format!("mailbox {}", w.thread_name(Tid(*to))),
            _ => format!("mailbox {}", w.thread_label(i)),
        })
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        match op {
            Op::Send { to, data } => send(w, i, to, data, cx),
            Op::RecvFrom { from } => receive(w, i, Some(from), cx),
            _ => receive(w, i, None, cx),
        }
    }
}

fn send(w: &mut World, i: usize, to: u64, data: Bytes, cx: &mut Cx<'_>) -> Outcome {
    if cx.tracing {
        cx.detail = format!("{} bytes {}", data.len(), preview(&data));
    }
    let Some(j) = w.thread_index(Tid(to)) else {
        return w.misuse(i, format!("send to unknown thread id `{to:#x}`"));
    };
    let me = w.threads[i].tid;
    let seq = w.threads[i].sends;
    w.threads[i].sends += 1;
    cx.message = Some((me, seq));
    if !w.threads[j].exited {
        w.held += MESSAGE_BYTES + data.len() as u64;
        w.threads[j].mailbox.push_back(Message {
            from: me,
            seq,
            data,
        });
    } else if cx.tracing {
        cx.detail.push_str(" (dropped: receiver has exited)");
    }
    Outcome::Return(Ret::unit())
}

fn receive(w: &mut World, i: usize, from: Option<u64>, cx: &mut Cx<'_>) -> Outcome {
    let t = &mut w.threads[i];
    let pos = match from {
        Some(from) => t.mailbox.iter().position(|m| m.from.0 == from),
        None => (!t.mailbox.is_empty()).then_some(0),
    };
    let m = t
        .mailbox
        .remove(pos.expect("recv scheduled while disabled"))
        .expect("message");
    let len = m.data.len() as u64;
    cx.message = Some((m.from, m.seq));
    if cx.tracing {
        cx.detail = format!("<- {} bytes {}", len, preview(&m.data));
        let from = m.from;
        t.taken = Some(m);
        let _ = write!(cx.detail, " from {}", w.thread_name(from));
    } else {
        t.taken = Some(m);
    }
    Outcome::Return(Ret::val(len))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn mailbox_selective_receive_and_dependence() {
        let mut w = world2();
        w.spawn_child(0, 9, 2, 0);
        let main = w.threads[0].tid.0;
        let (t1, t2) = (w.threads[1].tid.0, w.threads[2].tid.0);
        ret(run(
            &mut w,
            1,
            Op::Send {
                to: main,
                data: b"a".as_slice().into(),
            },
        ));
        ret(run(
            &mut w,
            2,
            Op::Send {
                to: main,
                data: b"b".as_slice().into(),
            },
        ));
        w.threads[0].pending = Op::RecvFrom { from: t2 };
        assert!(w.enabled(0));
        assert_eq!(
            ret(w.execute(0, 0, None, false, &mut Vec::new()).outcome).val,
            1
        );
        assert_eq!(&*w.threads[0].taken.as_ref().unwrap().data, b"b");
        w.threads[0].pending = Op::RecvFrom { from: t2 };
        assert!(!w.enabled(0));
        let (mut a, mut b) = (vec![], vec![]);
        w.threads[1].pending = Op::Send {
            to: main,
            data: Bytes::from(&[][..]),
        };
        w.threads[2].pending = Op::Send {
            to: main,
            data: Bytes::from(&[][..]),
        };
        w.accesses(1, &mut a);
        w.accesses(2, &mut b);
        assert!(a[0].conflicts(&b[0]), "two sends to one mailbox conflict");
        let _ = t1;
    }
}
