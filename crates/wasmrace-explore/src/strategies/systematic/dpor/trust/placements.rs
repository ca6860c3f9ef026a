//! The placements of a new event other than its maximal one (see the
//! parent module): the graphs a revisit makes, found with the graph's
//! order (`graph.rs`) and the causal pasts of the run's vector clocks
//! (`clock.rs`).

use super::clock::{Clocks, Past};
use super::graph::{Ev, Graph};
use std::collections::BTreeSet;
use wasmrace_trace::OpKind;

impl Graph {
    /// The graphs in which `a`, the next event, is placed other than
    /// maximally (see the parent module); `conf` are the events
    /// it conflicts with, ascending, and `clocks` this graph's. A revisit
    /// with more than `max_optional` optional events (2 to that many
    /// placements) is not enumerated: the second value says whether one
    /// was left out.
    pub(super) fn placements(
        &self,
        a: &Ev,
        conf: &[usize],
        clocks: &Clocks,
        max_optional: usize,
    ) -> (Vec<Graph>, bool) {
        let n = self.evs.len();
        let mut out = Vec::new();
        let mut left_out = false;
        let Some(acc) = a.acc.filter(|_| !conf.is_empty()) else {
            return (out, left_out);
        };
        let prev = self.prev_of(a);
        let cp = clocks.past(prev);
        let holds = |p: &Past, i: usize| clocks.holds(p, self, i);
        // A failed compare-exchange only reads, but placed before a write
        // it saw it may succeed: it is placed as the write it may become.
        if acc.kind.is_shared() && a.op != OpKind::AtomicCompareExchange {
            // Before the writes of a suffix of the object's chain.
            let mut chain = conf.to_vec();
            chain.sort_by(|&x, &y| self.order_of(x, y));
            for j in 0..chain.len() {
                let p = clocks.past_with(&cp, chain[..j].iter().copied());
                if chain[j..].iter().any(|&c| holds(&p, c)) {
                    continue;
                }
                out.push(self.with(&vec![false; n], a.clone(), &clocks.marks(&p, self)));
            }
            return (out, left_out);
        }
        let mut seen = BTreeSet::new();
        for &b in conf {
            // A join placed before the exit it waits for could not run.
            if holds(&cp, b) || (a.op == OpKind::Join && self.evs[b].op == OpKind::Exit) {
                continue;
            }
            // Whatever else is placed, `b` must have been added maximally.
            if !self.maximal(b) {
                continue;
            }
            // Before `b` means after everything of its object added before
            // it, and maybe after later events `a` sees that are not after
            // `b` (before `a`, they would put `b` before `a`).
            let optional: Vec<usize> = conf
                .iter()
                .copied()
                .filter(|&c| c > b && a.sees(&self.evs[c]) && !clocks.after(self, b, c))
                .collect();
            if optional.len() > max_optional {
                left_out = true;
                continue;
            }
            for mask in 0..(1u32 << optional.len()) {
                let mut s: Vec<usize> = conf.iter().copied().filter(|&c| c < b).collect();
                s.extend(
                    (0..optional.len())
                        .filter(|k| mask >> k & 1 == 1)
                        .map(|k| optional[k]),
                );
                // The closure may bring in more of the object's events
                // (a read before a write `a` sees): they are before `a` too.
                let p = clocks.past_with(&cp, s.iter().copied());
                if holds(&p, b) {
                    continue;
                }
                let mut start: Vec<usize> = prev.into_iter().collect();
                start.extend(
                    conf.iter()
                        .copied()
                        .filter(|&c| holds(&p, c) && a.sees(&self.evs[c])),
                );
                let kept = self.porf(start);
                let drop: Vec<bool> = (0..n).map(|e| e > b && !kept[e]).collect();
                if (0..n).any(|e| drop[e] && holds(&p, e)) {
                    continue;
                }
                if (0..n).any(|e| drop[e] && !self.maximal(e)) {
                    continue;
                }
                let key = (
                    drop.clone(),
                    conf.iter()
                        .map(|&c| holds(&p, c) && !drop[c])
                        .collect::<Vec<_>>(),
                );
                if seen.insert(key) {
                    out.push(self.with(&drop, a.clone(), &clocks.marks(&p, self)));
                }
            }
        }
        (out, left_out)
    }
}
