//! A graph of the TruSt-style exploration (see the parent module): its
//! events in the order they were added and the order of its conflicting
//! pairs. The placements of a new event other than its maximal one are
//! `placements.rs`'s: they ask the run's vector clocks (`clock.rs`), which
//! are computed from a graph.

use crate::program::StepInfo;
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

/// "No event": an absent program-order predecessor.
const NONE: u32 = u32::MAX;

/// A graph: events in stamp order and the order of conflicting pairs.
///
/// Each event's predecessors among its conflicting pairs are one slice of
/// a flat list (ascending, so that a pair is looked up by binary search):
/// every job is a copy of a graph, and a copy of a few flat vectors is
/// cheaper than of a tree of pairs and a vector per event. Queries about
/// the causal past go to the run's clocks (`clock.rs`), which jobs do not hold.
#[derive(Clone, Debug, Default)]
pub(super) struct Graph {
    pub(super) evs: Vec<Ev>,
    /// `before[start[y]..start[y + 1]]` (the last event's slice runs to the
    /// end): the events before `evs[y]` that conflict with it, of other
    /// threads, ascending.
    before: Vec<u32>,
    start: Vec<u32>,
    /// Per event, its thread's previous event, or the spawn that made its
    /// thread (for a first event), or [`NONE`].
    prev: Vec<u32>,
    /// Per event, whether it was added maximally ([`Graph::maximal`]),
    /// kept because revisits ask it of every event they would delete.
    max: Vec<bool>,
    /// Each thread's last event: where its next event goes.
    tails: Vec<(Tid, u32)>,
}

impl Graph {
    /// The events of other threads before `y` that conflict with it,
    /// ascending.
    pub(super) fn before_of(&self, y: usize) -> &[u32] {
        let end = self
            .start
            .get(y + 1)
            .map_or(self.before.len(), |&e| e as usize);
        &self.before[self.start[y] as usize..end]
    }

    /// Every ordered conflicting pair `(x, y)`: `x` before `y`.
    pub(super) fn pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.evs.len())
            .flat_map(move |y| self.before_of(y).iter().map(move |&x| (x as usize, y)))
    }

    /// The bytes the graph's collections hold, as allocated, with the
    /// allocator's header of each (what `--frontier-mb` counts).
    pub(super) fn bytes(&self) -> usize {
        const HEADER: usize = 16;
        let spawned: usize = (self.evs.iter())
            .filter(|e| e.spawned.capacity() > 0)
            .map(|e| e.spawned.capacity() * std::mem::size_of::<Tid>() + HEADER)
            .sum();
        self.evs.capacity() * std::mem::size_of::<Ev>()
            + spawned
            + (self.before.capacity() + self.start.capacity() + self.prev.capacity()) * 4
            + self.max.capacity()
            + self.tails.capacity() * std::mem::size_of::<(Tid, u32)>()
            + 6 * HEADER
    }

    /// Adds `a` last, after every event it conflicts with (its maximal
    /// placement), in place: `conf` are those events, ascending.
    pub(super) fn push(&mut self, a: Ev, conf: &[usize]) {
        let at = self.evs.len();
        self.start.push(self.before.len() as u32);
        self.before.extend(conf.iter().map(|&i| i as u32));
        self.prev.push(self.prev_of(&a).map_or(NONE, |p| p as u32));
        self.max.push(a.alt == 0);
        self.set_tail(a.tid, at);
        self.evs.push(a);
    }

    /// Records `i` as `tid`'s last event.
    fn set_tail(&mut self, tid: Tid, i: usize) {
        match self.tails.iter_mut().find(|(t, _)| *t == tid) {
            Some(tail) => tail.1 = i as u32,
            None => self.tails.push((tid, i as u32)),
        }
    }

    /// `tid`'s last event, if it has one.
    fn tail(&self, tid: Tid) -> Option<usize> {
        let tail = self.tails.iter().find(|(t, _)| *t == tid);
        tail.map(|&(_, i)| i as usize)
    }

    /// The index among its thread's events of `tid`'s next event.
    pub(super) fn next_idx(&self, tid: Tid) -> u32 {
        self.tail(tid).map_or(1, |i| self.evs[i].idx + 1)
    }

    /// The events `i` directly follows.
    pub(super) fn preds(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let prev = Some(self.prev[i] as usize).filter(|_| self.prev[i] != NONE);
        (self.before_of(i).iter().map(|&p| p as usize)).chain(prev)
    }

    /// The event a new event `e` would follow in program order (or the
    /// spawn that made its thread).
    pub(super) fn prev_of(&self, e: &Ev) -> Option<usize> {
        if e.idx > 1 {
            // Only ever asked of a thread's next event.
            let last = self.tail(e.tid).filter(|&i| self.evs[i].idx == e.idx - 1);
            debug_assert!(last.is_some(), "a thread's events are added in order");
            last
        } else {
            self.evs.iter().position(|x| x.spawned.contains(&e.tid))
        }
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
            let p = self.prev[i] as usize;
            stack.extend(Some(p).filter(|_| self.prev[i] != NONE && !seen[p]));
            stack.extend(
                (self.before_of(i).iter())
                    .map(|&x| x as usize)
                    .filter(|&x| !seen[x] && e.sees(&self.evs[x])),
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
        } else if self.before_of(y).binary_search(&(x as u32)).is_ok() {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Greater
        }
    }

    /// A linearization: events in an order that respects the graph, the
    /// least-stamped ready event first.
    pub(super) fn linearize(&self) -> Vec<usize> {
        let n = self.evs.len();
        // Successors as one flat list (`next[first[p]..first[p + 1]]`).
        let mut waiting = vec![0u32; n];
        let mut first = vec![0u32; n + 1];
        for (i, w) in waiting.iter_mut().enumerate() {
            for p in self.preds(i) {
                first[p + 1] += 1;
                *w += 1;
            }
        }
        for p in 0..n {
            first[p + 1] += first[p];
        }
        let mut fill = first.clone();
        let mut next = vec![0u32; first[n] as usize];
        for i in 0..n {
            for p in self.preds(i) {
                next[fill[p] as usize] = i as u32;
                fill[p] += 1;
            }
        }
        // The least ready event is at or after `lo`: stamps mostly follow
        // the order, so a scan beats a heap.
        let mut ready: Vec<bool> = waiting.iter().map(|&w| w == 0).collect();
        let mut lo = 0;
        let mut order = Vec::with_capacity(n);
        while order.len() < n {
            while lo < n && !ready[lo] {
                lo += 1;
            }
            assert!(lo < n, "a graph is acyclic");
            let i = lo;
            ready[i] = false;
            order.push(i);
            for &j in &next[first[i] as usize..first[i + 1] as usize] {
                let j = j as usize;
                waiting[j] -= 1;
                if waiting[j] == 0 {
                    ready[j] = true;
                    lo = lo.min(j);
                }
            }
        }
        order
    }

    /// This graph without the events `drop` marks, with `a` added last,
    /// after the events `before_a` marks and before the other conflicting
    /// ones.
    pub(super) fn with(&self, drop: &[bool], a: Ev, before_a: &[bool]) -> Graph {
        let n = self.evs.len();
        // Old index to new; an event may follow one of a later stamp, so
        // the whole map comes first.
        let mut map = vec![NONE; n];
        let mut kept = 0;
        for i in (0..n).filter(|&i| !drop[i]) {
            map[i] = kept as u32;
            kept += 1;
        }
        let mut g = Graph {
            evs: Vec::with_capacity(kept + 1),
            before: Vec::with_capacity(self.before.len() + n),
            start: Vec::with_capacity(kept + 1),
            prev: Vec::with_capacity(kept + 1),
            max: Vec::with_capacity(kept + 1),
            tails: Vec::with_capacity(self.tails.len() + 1),
        };
        let at = kept as u32;
        for (i, e) in self.evs.iter().enumerate() {
            if drop[i] {
                continue;
            }
            g.start.push(g.before.len() as u32);
            // `map` is monotone: each slice stays ascending, and `a`,
            // last, goes at its end.
            let kept = self.before_of(i).iter().filter(|&&x| !drop[x as usize]);
            g.before.extend(kept.map(|&x| map[x as usize]));
            if !before_a[i] && e.conflicts(&a) {
                g.before.push(at);
            }
            // A kept event's thread predecessor is kept: a deleted event
            // is after the revisited one and outside `a`'s porf, which
            // holds the program-order past of everything in it.
            let p = self.prev[i];
            g.prev.push(if p == NONE { NONE } else { map[p as usize] });
            g.max.push(e.alt == 0);
            g.set_tail(e.tid, g.evs.len());
            g.evs.push(e.clone());
        }
        g.start.push(g.before.len() as u32);
        for (i, e) in self.evs.iter().enumerate() {
            if !drop[i] && before_a[i] && e.conflicts(&a) {
                g.before.push(map[i]);
            }
        }
        let p = self.prev_of(&a).map_or(NONE, |p| map[p]);
        g.prev.push(p);
        g.max.push(a.alt == 0);
        g.set_tail(a.tid, g.evs.len());
        g.evs.push(a);
        // Reserved for the most pairs there could be: a job keeps it.
        g.before.shrink_to_fit();
        // Conflicting pairs are all ordered: an event is maximal unless it
        // is before one added earlier (or takes another alternative).
        for y in 0..g.evs.len() {
            for k in g.start[y] as usize..g.start.get(y + 1).map_or(g.before.len(), |&e| e as usize)
            {
                let x = g.before[k] as usize;
                if x > y {
                    g.max[x] = false;
                }
            }
        }
        g
    }
}

/// The one object a step touches, with the strongest way it touches it
/// (a write beside a read of one object is a write); `Err` for a step
/// over several objects (a condvar wait, the registry), which the search
/// does not place: its execution runs on untracked and the run is not
/// exhausted (see the parent module).
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
        g.pairs()
            .filter(|&(x, y)| x == last || y == last)
            .collect::<Vec<_>>()
    );
}
