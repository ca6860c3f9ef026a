//! Vector clocks of the graph a run holds (see the parent module): for
//! each event, the last event of every thread in its causal past, so that
//! "is `x` in the past of these events" costs one comparison, not a walk
//! of the graph. Kept by the run only: a job stores its graph alone.

use super::graph::Graph;
use wasmrace_trace::Tid;

/// The clocks of a graph's events, each a column per thread.
///
/// The causal past of an event (program order, the spawn of its thread
/// and the order of conflicting pairs, transitively) holds, of each
/// thread, a prefix of its events: so the index of that prefix's last
/// event says it all. One flat table, reused from run to run: a clock per
/// event would be an allocation per event.
#[derive(Clone, Debug, Default)]
pub(super) struct Clocks {
    /// The thread of each column, in the order the threads appeared.
    threads: Vec<Tid>,
    /// Columns per row (at least the threads').
    stride: usize,
    /// Per event (by stamp), its thread's column.
    col: Vec<u32>,
    /// Row per event (by stamp): per column, the index of that thread's
    /// last event in the event's causal past, inclusive (0: none).
    of: Vec<u32>,
}

/// A causal past: per column, the index of that thread's last event in
/// it (0: none).
#[derive(Clone, Debug, Default)]
pub(super) struct Past(Vec<u32>);

impl Clocks {
    /// Computes the clocks of `graph`'s events along `order`, a
    /// linearization of it, reusing this table's memory.
    pub(super) fn reset(&mut self, graph: &Graph, order: &[usize]) {
        self.threads.clear();
        self.col.clear();
        for e in &graph.evs {
            let col = self.column(e.tid);
            self.col.push(col as u32);
        }
        self.stride = self.threads.len();
        self.of.clear();
        self.of.resize(graph.evs.len() * self.stride, 0);
        for &i in order {
            self.set(graph, i);
        }
    }

    /// Adds the clock of `graph`'s last event, which follows only events
    /// that have one.
    pub(super) fn push(&mut self, graph: &Graph) {
        let i = graph.evs.len() - 1;
        let col = self.column(graph.evs[i].tid);
        if self.threads.len() > self.stride {
            self.widen(self.threads.len() + 4);
        }
        self.col.push(col as u32);
        self.of.resize(self.of.len() + self.stride, 0);
        self.set(graph, i);
    }

    /// `tid`'s column, added if new.
    fn column(&mut self, tid: Tid) -> usize {
        match self.threads.iter().position(|&t| t == tid) {
            Some(c) => c,
            None => {
                self.threads.push(tid);
                self.threads.len() - 1
            }
        }
    }

    /// Lays the table out again with `stride` columns per row.
    fn widen(&mut self, stride: usize) {
        let rows = self.col.len();
        let mut of = vec![0; rows * stride];
        for r in 0..rows {
            of[r * stride..r * stride + self.stride].copy_from_slice(self.row(r));
        }
        self.of = of;
        self.stride = stride;
    }

    fn row(&self, i: usize) -> &[u32] {
        &self.of[i * self.stride..(i + 1) * self.stride]
    }

    /// Computes event `i`'s clock from its predecessors'.
    fn set(&mut self, graph: &Graph, i: usize) {
        let s = self.stride;
        for p in graph.preds(i) {
            for k in 0..s {
                self.of[i * s + k] = self.of[i * s + k].max(self.of[p * s + k]);
            }
        }
        self.of[i * s + self.col[i] as usize] = graph.evs[i].idx;
    }

    /// The causal past (inclusive) of the events `start`.
    pub(super) fn past(&self, start: impl IntoIterator<Item = usize>) -> Past {
        self.past_with(&Past::default(), start)
    }

    /// `base` and the causal past (inclusive) of the events `start`.
    pub(super) fn past_with(&self, base: &Past, start: impl IntoIterator<Item = usize>) -> Past {
        let mut past = base.0.clone();
        past.resize(self.stride.max(past.len()), 0);
        for i in start {
            for (a, &b) in past.iter_mut().zip(self.row(i)) {
                *a = (*a).max(b);
            }
        }
        Past(past)
    }

    /// Whether `past` holds the event `i` of `graph`.
    pub(super) fn holds(&self, past: &Past, graph: &Graph, i: usize) -> bool {
        let c = self.col[i] as usize;
        past.0.get(c).is_some_and(|&last| last >= graph.evs[i].idx)
    }

    /// Whether `y` is causally after `x` (or is `x`).
    pub(super) fn after(&self, graph: &Graph, x: usize, y: usize) -> bool {
        self.row(y)[self.col[x] as usize] >= graph.evs[x].idx
    }

    /// `past` as a mark per event of `graph`.
    pub(super) fn marks(&self, past: &Past, graph: &Graph) -> Vec<bool> {
        (0..graph.evs.len())
            .map(|i| self.holds(past, graph, i))
            .collect()
    }
}
