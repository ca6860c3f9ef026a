//! Tables: a host-held `u64 -> u64` map whose conflicts are per key (each
//! key is its own object id); a remove that finds nothing only reads.

use super::{btree_bytes, Cx, Kind, Object, ObjectState, Outcome, Ret, World, TABLE_ENTRY_BYTES};
use crate::ops::Op;
use std::collections::BTreeMap;
use wasmrace_trace::{Access, Oid};

/// A table's entries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Table(pub BTreeMap<u64, u64>);

impl ObjectState for Table {
    fn describe(&self, _w: &World, _h: u64) -> String {
        let entries: Vec<String> = self
            .0
            .iter()
            .take(super::text::LIST_ITEMS + 1)
            .map(|(k, v)| format!("{k} -> {v}"))
            .collect();
        let n = self.0.len();
        let head = format!("{n} entr{}", if n == 1 { "y" } else { "ies" });
        super::text::with_list(head, "", &entries)
    }

    fn owns(&self, h: u64, id: Oid) -> bool {
        self.0.keys().any(|k| Oid::table_key(Oid(h), *k) == id)
    }

    fn heap_bytes(&self) -> usize {
        btree_bytes(self.0.len(), 2 * std::mem::size_of::<u64>())
    }
}

pub(super) struct Ops;

/// The table and key an operation works on (`None` for `table.new`).
fn slot(op: &Op) -> Option<(u64, u64)> {
    match op {
        Op::TableInsert { h, k, .. } | Op::TableGet { h, k, .. } | Op::TableRemove { h, k, .. } => {
            Some((*h, *k))
        }
        _ => None,
    }
}

impl Kind for Ops {
    fn accesses(_w: &World, _i: usize, op: &Op, out: &mut Vec<Access>) {
        match op {
            Op::TableGet { h, k, .. } => out.push(Access::read(Oid::table_key(Oid(*h), *k))),
            op => out.extend(slot(op).map(|(h, k)| Access::write(Oid::table_key(Oid(h), k)))),
        }
    }

    fn object(w: &World, _i: usize, op: &Op) -> Option<String> {
        slot(op).map(|(h, k)| format!("{}[{k}]", w.object_name(h)))
    }

    fn execute(w: &mut World, i: usize, op: Op, cx: &mut Cx<'_>) -> Outcome {
        if let Op::TableNew = op {
            let h = w.new_object(i, Object::Table(Table(BTreeMap::new())));
            if cx.tracing {
                cx.detail = format!("-> {}", w.object_name(h));
            }
            return Outcome::Return(Ret::val(h));
        }
        let (h, k) = slot(&op).expect("a table operation");
        let Some(Table(t)) = w.object_mut::<Table>(h) else {
            let name = op.kind().name();
            return w.misuse(
                i,
                format!("{name} on `{}`, which is not a table", w.object_name(h)),
            );
        };
        let insert = matches!(op, Op::TableInsert { .. });
        let before = t.len();
        let (found, out) = match op {
            Op::TableInsert { v, out, .. } => {
                let old = t.insert(k, v);
                if cx.tracing {
                    cx.detail = format!("{v} -> {old:?}");
                }
                (old, out)
            }
            Op::TableGet { out, .. } => (t.get(&k).copied(), out),
            Op::TableRemove { out, .. } => {
                let v = t.remove(&k);
                if v.is_none() {
                    // Nothing removed: only read.
                    cx.accesses.clear();
                    cx.accesses.push(Access::read(Oid::table_key(Oid(h), k)));
                }
                (v, out)
            }
            _ => unreachable!("not a table operation"),
        };
        // A new key or a removed one: the entries the host holds changed.
        let after = t.len();
        w.held = (w.held + after as u64 * TABLE_ENTRY_BYTES) - before as u64 * TABLE_ENTRY_BYTES;
        if cx.tracing && !insert {
            cx.detail = format!("-> {found:?}");
        }
        Outcome::Return(Ret::opt(out, found))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn table_conflicts_are_per_key() {
        let mut w = world2();
        let t = ret(run(&mut w, 0, Op::TableNew)).val as u64;
        let (mut x, mut y) = (vec![], vec![]);
        w.threads[0].pending = Op::TableInsert {
            h: t,
            k: 1,
            v: 0,
            out: 0,
        };
        w.threads[1].pending = Op::TableInsert {
            h: t,
            k: 2,
            v: 0,
            out: 0,
        };
        w.accesses(0, &mut x);
        w.accesses(1, &mut y);
        assert!(!x[0].conflicts(&y[0]));
    }
}
