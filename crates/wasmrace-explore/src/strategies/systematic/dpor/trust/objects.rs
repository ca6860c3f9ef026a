//! The events of the graph a run holds, by the object they touch (see the
//! parent module): a new event's conflicting events are found among its
//! object's, not by a scan of the whole graph. Kept by the run only, as
//! its clocks are.

use super::graph::{Ev, Graph};
use wasmrace_trace::Oid;

/// How many objects' lists a reset keeps.
const MAX_KEPT: usize = 64;

/// Per object, the events (by stamp, ascending) that touch it. A list,
/// not a hash map: a test touches few objects, and hashing each event's
/// cost more than the scan it saves.
#[derive(Clone, Debug, Default)]
pub(super) struct ByObject(Vec<(Oid, Vec<u32>)>);

impl ByObject {
    /// Indexes `graph`'s events.
    pub(super) fn reset(&mut self, graph: &Graph) {
        // The lists are kept, emptied, for the next run's events (most
        // runs touch the same objects), unless they grew many.
        if self.0.len() > MAX_KEPT {
            self.0.clear();
        }
        for (_, on) in &mut self.0 {
            on.clear();
        }
        for i in 0..graph.evs.len() {
            self.add(graph, i);
        }
    }

    /// Indexes `graph`'s last event.
    pub(super) fn push(&mut self, graph: &Graph) {
        self.add(graph, graph.evs.len() - 1);
    }

    fn add(&mut self, graph: &Graph, i: usize) {
        // A replayed event may come to touch its object another way (a
        // compare-exchange that now fails), never another object.
        if let Some(acc) = graph.evs[i].acc {
            match self.0.iter_mut().find(|(o, _)| *o == acc.obj) {
                Some((_, on)) => on.push(i as u32),
                None => self.0.push((acc.obj, vec![i as u32])),
            }
        }
    }

    /// The events of `graph` that `a` conflicts with, ascending.
    pub(super) fn conflicting(&self, graph: &Graph, a: &Ev) -> Vec<usize> {
        let Some(acc) = a.acc else {
            return Vec::new();
        };
        let on = self.0.iter().find(|(o, _)| *o == acc.obj);
        let on = on.map_or(&[][..], |(_, v)| &v[..]);
        (on.iter().map(|&i| i as usize))
            .filter(|&i| graph.evs[i].conflicts(a))
            .collect()
    }
}
