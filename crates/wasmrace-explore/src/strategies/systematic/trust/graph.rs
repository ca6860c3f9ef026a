//! A graph of the TruSt-style exploration (see the parent module): its
//! events in the order they were added, the order of its conflicting
//! pairs, and the placements of a new event other than its maximal one.

use crate::program::StepInfo;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use wasmrace_trace::{Access, OpKind, Tid};

/// One event of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ev {
    pub(super) tid: Tid,
    /// What it does.
    pub(super) op: OpKind,
    /// 1-based index among its thread's events.
    pub(super) idx: u32,
    /// The one object it touches, if any.
    pub(super) acc: Option<Access>,
    /// The alternative taken, and how many there were.
    pub(super) alt: u32,
    pub(super) alts: u32,
    /// A blocked attempt: the thread could not run here and stopped.
    pub(super) blocked: bool,
    /// Threads this event created.
    pub(super) spawned: Vec<Tid>,
}

impl Ev {
    pub(super) fn conflicts(&self, other: &Ev) -> bool {
        self.tid != other.tid
            && match (self.acc, other.acc) {
                (Some(a), Some(b)) => a.conflicts(&b),
                _ => false,
            }
    }
    /// Placed after `x`, this event sees `x`'s effect: `x` changes the
    /// object this event touches.
    pub(super) fn sees(&self, x: &Ev) -> bool {
        match (self.acc, x.acc) {
            (Some(a), Some(b)) => a.obj == b.obj && !b.kind.is_shared(),
            _ => false,
        }
    }
}

/// A graph: events in stamp order and the order of conflicting pairs.
#[derive(Clone, Debug, Default)]
pub(super) struct Graph {
    pub(super) evs: Vec<Ev>,
    /// `(x, y)`: `evs[x]` before `evs[y]`, both conflicting, different threads.
    pub(super) before: BTreeSet<(usize, usize)>,
    /// Per event, the events of `before` it follows.
    pub(super) into: Vec<Vec<usize>>,
    /// Per event, its thread's previous event, or the spawn that made its
    /// thread (for a first event).
    pub(super) prev: Vec<Option<usize>>,
    /// Per event, whether it was added maximally ([`Graph::maximal`]),
    /// kept because revisits ask it of every event they would delete.
    pub(super) max: Vec<bool>,
}

impl Graph {
    pub(super) fn new(evs: Vec<Ev>, before: BTreeSet<(usize, usize)>) -> Graph {
        let n = evs.len();
        let mut into = vec![Vec::new(); n];
        for &(x, y) in &before {
            into[y].push(x);
        }
        let at: std::collections::HashMap<(Tid, u32), usize> = evs
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.tid, e.idx), i))
            .collect();
        let mut spawner = std::collections::HashMap::new();
        for (i, e) in evs.iter().enumerate() {
            for t in &e.spawned {
                spawner.insert(*t, i);
            }
        }
        let prev = (evs.iter())
            .map(|e| match e.idx {
                1 => spawner.get(&e.tid).copied(),
                i => at.get(&(e.tid, i - 1)).copied(),
            })
            .collect();
        // Conflicting pairs are all ordered: an event is maximal unless it
        // is before one added earlier (or takes another alternative).
        let mut max: Vec<bool> = evs.iter().map(|e| e.alt == 0).collect();
        for &(x, y) in &before {
            if y < x {
                max[x] = false;
            }
        }
        Graph {
            evs,
            before,
            into,
            prev,
            max,
        }
    }

    /// Adds `a` last, after every event it conflicts with (its maximal
    /// placement), in place.
    pub(super) fn push(&mut self, a: Ev) {
        let at = self.evs.len();
        let into: Vec<usize> = (0..at).filter(|&i| self.evs[i].conflicts(&a)).collect();
        self.before.extend(into.iter().map(|&i| (i, at)));
        self.prev.push(self.prev_of(&a));
        self.into.push(into);
        self.max.push(a.alt == 0);
        self.evs.push(a);
    }

    /// The events `i` directly follows.
    pub(super) fn preds(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.into[i].iter().copied().chain(self.prev[i])
    }

    /// The event a new event `e` would follow in program order (or the
    /// spawn that made its thread).
    pub(super) fn prev_of(&self, e: &Ev) -> Option<usize> {
        if e.idx > 1 {
            (self.evs.iter()).position(|x| x.tid == e.tid && x.idx == e.idx - 1)
        } else {
            self.evs.iter().position(|x| x.spawned.contains(&e.tid))
        }
    }

    /// The causal past (inclusive) of `start`.
    pub(super) fn past(&self, start: impl IntoIterator<Item = usize>) -> Vec<bool> {
        self.past_with(&vec![false; self.evs.len()], start)
    }

    /// The causal past (inclusive) of `start` and of the events `base`
    /// marks, given that `base` is closed (a causal past itself): only
    /// what `start` adds is walked.
    pub(super) fn past_with(
        &self,
        base: &[bool],
        start: impl IntoIterator<Item = usize>,
    ) -> Vec<bool> {
        let mut seen = base.to_vec();
        let mut stack: Vec<usize> = start.into_iter().filter(|&i| !seen[i]).collect();
        while let Some(i) = stack.pop() {
            if !std::mem::replace(&mut seen[i], true) {
                stack.extend(self.preds(i).filter(|&p| !seen[p]));
            }
        }
        seen
    }

    /// The events causally after `b` (inclusive), given a linearization
    /// `order` of the graph (one pass: an event's predecessors come first).
    pub(super) fn future(&self, b: usize, order: &[usize]) -> Vec<bool> {
        let mut after = vec![false; self.evs.len()];
        after[b] = true;
        let from = order.iter().position(|&i| i == b).unwrap_or(0);
        for &i in &order[from..] {
            if !after[i] && self.preds(i).any(|p| after[p]) {
                after[i] = true;
            }
        }
        after
    }

    /// `a`'s porf: its program-order past and the events before it whose
    /// effect it sees, transitively (not the reads it merely follows).
    pub(super) fn porf(&self, start: Vec<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.evs.len()];
        let mut stack = start;
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            let e = &self.evs[i];
            stack.extend(self.prev[i]);
            stack.extend(
                self.into[i]
                    .iter()
                    .copied()
                    .filter(|&x| e.sees(&self.evs[x])),
            );
        }
        seen
    }

    /// Whether `e` was added maximally: after every conflicting event
    /// added before it, and with its first alternative.
    pub(super) fn maximal(&self, e: usize) -> bool {
        self.max[e]
    }

    /// How two conflicting events (or two of one thread) are ordered in
    /// the graph: every such pair is, by program order or by `before`.
    pub(super) fn order_of(&self, x: usize, y: usize) -> std::cmp::Ordering {
        let (ex, ey) = (&self.evs[x], &self.evs[y]);
        if ex.tid == ey.tid {
            ex.idx.cmp(&ey.idx)
        } else if self.before.contains(&(x, y)) {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    }

    /// A linearization: events in an order that respects the graph, the
    /// least-stamped ready event first.
    pub(super) fn linearize(&self) -> Vec<usize> {
        let n = self.evs.len();
        let mut waiting: Vec<usize> = (0..n).map(|i| self.preds(i).count()).collect();
        let mut next = vec![Vec::new(); n];
        for i in 0..n {
            for p in self.preds(i) {
                next[p].push(i);
            }
        }
        let mut ready: BinaryHeap<Reverse<usize>> =
            (0..n).filter(|&i| waiting[i] == 0).map(Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(i)) = ready.pop() {
            order.push(i);
            for &j in &next[i] {
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready.push(Reverse(j));
                }
            }
        }
        assert_eq!(order.len(), n, "a graph is acyclic");
        order
    }

    /// This graph without the events `drop` marks, with `a` added last,
    /// after the events `before_a` marks and before the other conflicting
    /// ones.
    pub(super) fn with(&self, drop: &[bool], a: Ev, before_a: &[bool]) -> Graph {
        let mut map = vec![usize::MAX; self.evs.len()];
        let mut evs = Vec::new();
        for (i, e) in self.evs.iter().enumerate() {
            if !drop[i] {
                map[i] = evs.len();
                evs.push(e.clone());
            }
        }
        let mut before: BTreeSet<(usize, usize)> = (self.before.iter())
            .filter(|&&(x, y)| !drop[x] && !drop[y])
            .map(|&(x, y)| (map[x], map[y]))
            .collect();
        let at = evs.len();
        for (i, e) in self.evs.iter().enumerate() {
            if !drop[i] && e.conflicts(&a) {
                before.insert(if before_a[i] {
                    (map[i], at)
                } else {
                    (at, map[i])
                });
            }
        }
        evs.push(a);
        Graph::new(evs, before)
    }

    /// The graphs in which `a`, the next event, is placed other than
    /// maximally (see the module documentation).
    pub(super) fn placements(&self, a: &Ev) -> Vec<Graph> {
        let n = self.evs.len();
        let conf: Vec<usize> = (0..n).filter(|&i| self.evs[i].conflicts(a)).collect();
        let mut out = Vec::new();
        let Some(acc) = a.acc.filter(|_| !conf.is_empty()) else {
            return out;
        };
        let cp = self.past(self.prev_of(a));
        // Computed once, and only when some placement needs it.
        let mut order: Option<Vec<usize>> = None;
        // A failed compare-exchange only reads, but placed before a write
        // it saw it may succeed: it is placed as the write it may become.
        if acc.kind.is_shared() && a.op != OpKind::AtomicCompareExchange {
            // Before the writes of a suffix of the object's chain.
            let mut chain = conf.clone();
            chain.sort_by(|&x, &y| self.order_of(x, y));
            for j in 0..chain.len() {
                let p = self.past_with(&cp, chain[..j].iter().copied());
                if chain[j..].iter().any(|&c| p[c]) {
                    continue;
                }
                out.push(self.with(&vec![false; n], a.clone(), &p));
            }
            return out;
        }
        let mut seen = BTreeSet::new();
        for &b in &conf {
            // A join placed before the exit it waits for could not run.
            if cp[b] || (a.op == OpKind::Join && self.evs[b].op == OpKind::Exit) {
                continue;
            }
            // Whatever else is placed, `b` must have been added maximally.
            if !self.maximal(b) {
                continue;
            }
            // Before `b` means after everything of its object added before
            // it, and maybe after later events `a` sees that are not after
            // `b` (before `a`, they would put `b` before `a`).
            let order = order.get_or_insert_with(|| self.linearize());
            let after_b = self.future(b, order);
            let optional: Vec<usize> = conf
                .iter()
                .copied()
                .filter(|&c| c > b && a.sees(&self.evs[c]) && !after_b[c])
                .collect();
            assert!(optional.len() <= 16, "trust prototype: too many placements");
            for mask in 0..(1u32 << optional.len()) {
                let mut s: Vec<usize> = conf.iter().copied().filter(|&c| c < b).collect();
                s.extend(
                    (0..optional.len())
                        .filter(|k| mask >> k & 1 == 1)
                        .map(|k| optional[k]),
                );
                // The closure may bring in more of the object's events
                // (a read before a write `a` sees): they are before `a` too.
                let p = self.past_with(&cp, s.iter().copied());
                if p[b] {
                    continue;
                }
                let mut start: Vec<usize> = self.prev_of(a).into_iter().collect();
                start.extend(
                    conf.iter()
                        .copied()
                        .filter(|&c| p[c] && a.sees(&self.evs[c])),
                );
                let kept = self.porf(start);
                let drop: Vec<bool> = (0..n).map(|e| e > b && !kept[e]).collect();
                if (0..n).any(|e| drop[e] && p[e]) {
                    continue;
                }
                if (0..n).any(|e| drop[e] && !self.maximal(e)) {
                    continue;
                }
                let key = (
                    drop.clone(),
                    conf.iter().map(|&c| p[c] && !drop[c]).collect::<Vec<_>>(),
                );
                if seen.insert(key) {
                    out.push(self.with(&drop, a.clone(), &p));
                }
            }
        }
        out
    }
}

/// The one object a step touches, with the strongest way it touches it
/// (a write beside a read of one object is a write); `Err` for a step
/// over several objects, which the prototype cannot place.
pub(super) fn one_access(accesses: &[Access]) -> Result<Option<Access>, ()> {
    let mut out: Option<Access> = None;
    for a in accesses {
        match out {
            None => out = Some(*a),
            Some(o) if o.obj != a.obj => return Err(()),
            Some(o) if o.kind.is_shared() && !a.kind.is_shared() => out = Some(*a),
            Some(_) => {}
        }
    }
    Ok(out)
}

pub(super) fn debug_divergence(g: &Graph, i: usize, step: &StepInfo) {
    let e = &g.evs[i];
    eprintln!(
        "diverged at stamp {i}: graph {:?} / step {:?} {:?}",
        (e.tid.0 % 10000, e.idx, e.op, e.acc),
        step.op,
        step.accesses
    );
    for (k, x) in g.evs.iter().enumerate() {
        if x.tid == e.tid || k + 1 == g.evs.len() {
            eprintln!(
                "   stamp {k}: {:?} {} {:?} {:?} blocked {}",
                x.tid.0 % 10000,
                x.idx,
                x.op,
                x.acc.map(|a| (a.obj.0 % 10000, a.kind)),
                x.blocked
            );
        }
    }
    let last = g.evs.len() - 1;
    eprintln!(
        "   last's order: {:?}",
        g.before
            .iter()
            .filter(|&&(x, y)| x == last || y == last)
            .collect::<Vec<_>>()
    );
}
