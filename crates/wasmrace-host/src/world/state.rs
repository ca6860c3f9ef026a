//! What a trace shows of the objects' state after a step: the objects the
//! step touched, found from its accesses, each described by its own kind
//! (`ObjectState::describe` for shared objects, `mailbox::describe`,
//! `thread::describe`, `registry::describe`), bounded and clipped.

use super::text::{fmt_name, LIST_ITEMS};
use super::{mailbox, registry, thread, World};
use std::sync::Arc;
use wasmrace_trace::{Access, ObjectValue, Oid};

/// Longest description kept, in characters: a guest controls names and
/// message bytes, and a trace keeps one description per touched object.
const VALUE_CHARS: usize = 200;

/// Something whose state a trace shows. Every variant is described by
/// `World::describe_target`'s exhaustive match, so a new kind of target
/// cannot be added without saying how it is shown.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A shared object (cell, atomic, mutex, ...), by handle.
    Object(u64),
    /// The mailbox of the thread at this index.
    Mailbox(usize),
    /// The thread at this index: alive, blocked or exited, and its name.
    Thread(usize),
    /// A registry name.
    Name(Arc<[u8]>),
}

/// `s` with control characters escaped ([`wasmrace_trace::text::shown`],
/// as every printed value is) and cut to `VALUE_CHARS` characters, marked
/// `…` when cut like the lists and previews inside the states.
fn clip(s: String) -> String {
    let mut s = match wasmrace_trace::text::shown(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(escaped) => escaped,
    };
    if let Some((cut, _)) = s.char_indices().nth(VALUE_CHARS) {
        s.truncate(cut);
        s.push('…');
    }
    s
}

impl World {
    /// Adds to `out` what `accesses` touch, as far as the current state
    /// explains them (an id nothing alive explains is left out).
    pub fn targets(&self, accesses: &[Access], out: &mut Vec<Target>) {
        out.extend(accesses.iter().filter_map(|a| self.target(a.obj)));
    }

    /// Adds to `out` the objects thread `i` made since it had made
    /// `before` of them (a `*.new` step touches nothing else).
    pub fn made_since(&self, i: usize, before: u32, out: &mut Vec<Target>) {
        let t = &self.threads[i];
        out.extend((before..t.objects).map(|k| Target::Object(super::handle(t.tid, k))));
    }

    fn target(&self, id: Oid) -> Option<Target> {
        if self.objects.contains_key(&id.0) {
            return Some(Target::Object(id.0));
        }
        for (i, t) in self.threads.iter().enumerate() {
            if Oid::mailbox(t.tid) == id {
                return Some(Target::Mailbox(i));
            }
            if Oid::liveness(t.tid) == id || registry::name_slot(t.tid) == id {
                return Some(Target::Thread(i));
            }
        }
        if let Some(n) = self.names.keys().find(|n| Oid::name(n) == id) {
            return Some(Target::Name(n.clone()));
        }
        // Ids an object derives (a table's keys, a barrier's generations).
        self.objects
            .iter()
            .find(|(h, e)| e.obj.owns(**h, id))
            .map(|(h, _)| Target::Object(*h))
    }

    /// Target `t`'s name and state, clipped; `None` for an object this
    /// world does not have.
    pub fn describe_target(&self, t: &Target) -> Option<ObjectValue> {
        let (object, value) = match t {
            Target::Object(h) => {
                let e = self.objects.get(h)?;
                (self.object_name(*h), e.obj.describe(self, *h))
            }
            Target::Mailbox(i) => (
                format!("mailbox {}", self.thread_label(*i)),
                mailbox::describe(self, *i),
            ),
            Target::Thread(i) => (
                format!("thread {}", self.thread_label(*i)),
                thread::describe(self, *i),
            ),
            Target::Name(n) => (format!("name {}", fmt_name(n)), registry::describe(self, n)),
        };
        Some(ObjectValue {
            object,
            value: clip(value),
        })
    }

    /// The threads whose pending operation `waits` says waits for
    /// something, by name.
    pub(super) fn threads_waiting(&self, waits: impl Fn(&crate::ops::Op) -> bool) -> Vec<String> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.exited && waits(&t.pending))
            .take(LIST_ITEMS + 1)
            .map(|(i, _)| self.thread_label(i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::ops::Op;
    use crate::world::text::with_list;
    use crate::world::Outcome;

    /// The state of object `h` as a trace shows it.
    fn value(w: &World, h: u64) -> String {
        w.describe_target(&Target::Object(h)).unwrap().value
    }

    fn new(w: &mut World, op: Op) -> u64 {
        ret(run(w, 0, op)).val as u64
    }

    #[test]
    fn a_held_mutex_names_its_holder_and_waiters() {
        let mut w = world2();
        let m = new(&mut w, Op::MutexNew);
        assert_eq!(value(&w, m), "free");
        ret(run(&mut w, 1, Op::MutexLock { h: m }));
        w.threads[0].pending = Op::MutexLock { h: m };
        assert_eq!(value(&w, m), "held by main.1; waiting: main");
        let v = w.describe_target(&Target::Object(m)).unwrap();
        assert_eq!(v.object, "mutex main#0");
    }

    #[test]
    fn a_mailbox_lists_its_oldest_messages_clipped() {
        let mut w = world2();
        let main = w.threads[0].tid.0;
        assert_eq!(mailbox::describe(&w, 0), "empty");
        for k in 0..6u8 {
            let data = vec![b'a' + k; 40];
            ret(run(
                &mut w,
                1,
                Op::Send {
                    to: main,
                    data: data.as_slice().into(),
                },
            ));
        }
        let d = mailbox::describe(&w, 0);
        assert!(
            d.starts_with(
                r#"6 messages: 40 bytes "aaaaaaaaaaaaaaaa" (+24 bytes) from main.1, 40 bytes "bbbb"#
            ),
            "{d}"
        );
        assert!(
            d.ends_with(", …") && !d.contains("eeee"),
            "four listed: {d}"
        );
        let v = w.describe_target(&Target::Mailbox(0)).unwrap();
        assert_eq!(v.object, "mailbox main");
    }

    #[test]
    fn every_kind_describes_its_state() {
        let mut w = world2();
        let cell = new(&mut w, Op::CellNew { init: 0 });
        ret(run(&mut w, 1, Op::CellSet { h: cell, v: 3 }));
        assert_eq!(value(&w, cell), "value = 3");
        let atomic = new(&mut w, Op::AtomicNew { init: 0 });
        ret(run(&mut w, 1, Op::AtomicFetchAdd { h: atomic, v: 5 }));
        assert_eq!(value(&w, atomic), "value = 5");
        let (cv, m) = (new(&mut w, Op::CondvarNew), new(&mut w, Op::MutexNew));
        ret(run(&mut w, 1, Op::MutexLock { h: m }));
        assert!(matches!(
            run(&mut w, 1, Op::CondvarWait { cv, m }),
            Outcome::Continue
        ));
        assert_eq!(value(&w, cv), "waiters: main.1");
        assert_eq!(value(&w, m), "free");
        let table = new(&mut w, Op::TableNew);
        for k in 0..6 {
            ret(run(
                &mut w,
                0,
                Op::TableInsert {
                    h: table,
                    k,
                    v: 10 * k,
                    out: 0,
                },
            ));
        }
        assert_eq!(
            value(&w, table),
            "6 entries: 0 -> 0, 1 -> 10, 2 -> 20, 3 -> 30, …"
        );
        let mut touched = Vec::new();
        w.targets(
            &[Access::write(Oid::table_key(Oid(table), 4))],
            &mut touched,
        );
        assert_eq!(touched, [Target::Object(table)], "a key names its table");
        let rw = new(&mut w, Op::RwLockNew);
        ret(run(&mut w, 0, Op::RwLockRead { h: rw }));
        ret(run(&mut w, 0, Op::RwLockRead { h: rw }));
        assert_eq!(value(&w, rw), "read by: main (x2)");
        let barrier = new(&mut w, Op::BarrierNew { n: 2 });
        assert!(matches!(
            run(&mut w, 0, Op::BarrierWait { h: barrier }),
            Outcome::Continue
        ));
        assert_eq!(value(&w, barrier), "1 of 2 arrived, 0 generations released");
        let child = w.threads[1].tid.0;
        let name: crate::ops::Bytes = b"worker".as_slice().into();
        ret(run(
            &mut w,
            0,
            Op::Register {
                name: name.clone(),
                tid: child,
            },
        ));
        assert_eq!(registry::describe(&w, &name), "names main.1");
        assert_eq!(
            thread::describe(&w, 1),
            "blocked: waits for a notification on `condvar main#2`, registered as \"worker\""
        );
    }

    #[test]
    fn lists_are_bounded_and_values_clipped() {
        let items: Vec<String> = (0..9).map(|i| i.to_string()).collect();
        assert_eq!(
            with_list("held by main".into(), "waiting", &items),
            "held by main; waiting: 0, 1, 2, 3, …"
        );
        assert_eq!(with_list("free".into(), "waiting", &[]), "free");
        let long = clip("x".repeat(1000));
        assert_eq!(long.chars().count(), VALUE_CHARS + 1);
        assert!(long.ends_with('…'));
        assert_eq!(clip("a\u{1b}[2Jb\n".into()), "a\\u{1b}[2Jb\\n");
    }
}
