//! The iterations of preemption bounding: the subtrees a search defers
//! to the next iteration, and how it starts the next of them (or the next
//! iteration) once a subtree is done.

use super::Dfs;
use crate::explorer::visits::ExpId;
use crate::prefix_tree::{NodeId, NIL};
use crate::strategy::Start;

/// A deferred subtree: its prefix's arena node, and the deepest expansion
/// of a shared state cache on it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Deferred {
    pub(super) node: NodeId,
    pub(super) exp: ExpId,
    /// With other workers (`check --jobs`): it directly follows the entry
    /// before it in its list (the one run before it) in the search order,
    /// so that exploring it right after that one's subtree continues the
    /// stretch (see `Dfs::defer`).
    pub(super) follows: bool,
}

impl Dfs {
    /// The start of the subtree below `forced` (just set): resumes the last
    /// execution where it parts from that prefix.
    pub(super) fn enter_forced(&mut self) -> Start {
        let lcp = self
            .path
            .iter()
            .zip(&self.forced)
            .take_while(|(a, b)| a == b)
            .count();
        self.path.truncate(lcp);
        if lcp == 0 {
            Start::Fresh
        } else {
            Start::Resume { prefix_len: lcp }
        }
    }

    /// Defers the subtree below `node` to the next iteration.
    ///
    /// In one search, the next iteration explores the subtrees in the
    /// order they were deferred. A worker sharing the tree defers only
    /// those of its executions, but two it defers in one stretch (a run of
    /// consecutive executions) are consecutive in that order too: no other
    /// worker's execution, nor deferral, comes between. Marked so, the
    /// second continues the stretch of the first when the worker explores
    /// them in a row: a bounded search defers a subtree every two
    /// executions or so, and a stretch each cost a lock of the pool and
    /// its memory until folded (`condvar_pc` at bound 3 on two threads
    /// opened 160,000).
    pub(super) fn defer(&mut self, node: NodeId, exp: ExpId) {
        self.deferred += 1;
        let follows = self.pool.is_some()
            && self.shared.is_none()
            && !self.s_next.is_empty()
            && self.deferred_in == Some(self.stretch);
        self.deferred_in = Some(self.stretch);
        self.s_next.push(Deferred { node, exp, follows });
    }

    /// Starts the next deferred subtree, moving to the next iteration when
    /// this one is done; `None` when nothing is left.
    pub(super) fn next_subtree(&mut self) -> Option<Start> {
        if self.base_node != NIL {
            self.arena.release(self.base_node);
            self.base_node = NIL;
        }
        self.forced.clear();
        loop {
            if let Some(entry) = self.s_current.pop() {
                let steps = self.arena.prefix(entry.node);
                if self.after_threshold(&steps) {
                    self.set_aside(entry, steps);
                    continue;
                }
                // The previous subtree was this list's entry before it,
                // explored whole by this worker.
                let gap = std::mem::take(&mut self.gap);
                if !entry.follows || self.jumped || gap {
                    self.stretch += 1;
                }
                self.jumped = false;
                self.forced = steps.into_iter().map(|(d, _)| d).collect();
                self.base_node = entry.node;
                self.base_exp = entry.exp;
                return Some(self.enter_forced());
            }
            let more = self
                .opts
                .preemption_bound
                .is_some_and(|b| self.iteration < b);
            if more && !self.s_next.is_empty() {
                self.iteration += 1;
                // Pop in deferral order: earlier (shallower, preferred)
                // deferrals first, like the search that deferred them.
                self.s_current = std::mem::take(&mut self.s_next);
                self.s_current.reverse();
                self.deferred_in = None;
                // Other workers' subtrees of the last iteration come
                // between: the first starts a stretch.
                self.gap = true;
                continue;
            }
            return None;
        }
    }
}
