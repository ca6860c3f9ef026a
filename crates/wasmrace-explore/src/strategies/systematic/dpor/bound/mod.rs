//! Bounded partial-order reduction (`--strategy dpor --preemption-bound N`):
//! Coons, Musuvathi & McKinley, "Bounded partial-order reduction" (OOPSLA
//! 2013), on source-DPOR's backtrack sets. It explores at least one
//! schedule of every trace that has a schedule with at most `N`
//! preemptions (a switch away from a thread that could have continued and
//! did not yield, [`crate::program::is_preemption`], as DFS counts them).
//!
//! **Why pruning alone is unsound.** DPOR reverses a race `e ⋖ e'` by
//! running an initial of `notdep(e, E).e'` at the state before `e`. Under
//! a bound that switch may cost a preemption the path cannot afford, while
//! the same trace is reachable within the bound by switching earlier, where
//! switching was free or no dearer than the path's own switch: the bound
//! makes independent steps dependent (the paper's "bound dependences").
//! So, besides the usual backtrack point at `e` (added only if affordable,
//! else counted as pruned), every reversal also adds *conservative*
//! backtrack points in the block `e` lies in, from its start `j` (the last
//! state before `e` where the running thread changed, or the previous step
//! yielded). At `j` it adds an initial of the reversal that is enabled, or,
//! when none is, every enabled thread (the paper's `Post` condition, with
//! source-DPOR's initials for the racing thread). It also adds an enabled
//! initial at every later state of the block before `e`, which the paper
//! does not: where a switch lands inside a block decides where the other
//! thread later blocks, and a block makes the switch back free. Random
//! model `seed 141` (bound 1) needs it: a reader preempting a writer that
//! holds a lock blocks on that lock and gives the writer back for free,
//! and only a switch between the write and the unlock gets there in one
//! preemption; the block start is before the write, and the reversal's
//! own point after the unlock.
//!
//! **Sleep sets only where nothing was pruned.** A thread put to sleep was
//! explored under the budget left at the state where it ran; an equivalent
//! schedule from a later state can need fewer preemptions than the one
//! explored, so plain sleep sets drop traces within the bound (the
//! property test in `bound/tests.rs` finds such programs). The paper's
//! algorithm has backtrack sets only (Flanagan & Godefroid's DPOR), and
//! without sleep sets source-DPOR reruns traces by the thousand
//! (`filesystem_14`, 2 traces: 28,659 executions under bound 2). So a
//! thread goes to sleep only when the bound pruned nothing while its
//! subtree was explored: that subtree was then explored as unbounded
//! source-DPOR explores it, every trace that starts with the thread's step
//! from there, whatever its preemptions. A free choice that would switch
//! away from a sleeping last thread is a preemption too; when the bound
//! cannot afford it, the execution is abandoned and the refusal counted.
//! Wakeup trees are not used: a planned sequence fixes several switches at
//! once, and nothing shows that the bound keeps a representative of each
//! trace then (Concuerror's bounded variant needs source-DPOR too); bounded
//! DPOR always runs in source mode.
//!
//! **What it claims.** A reversal the bound refused is counted
//! ([`Bound::pruned`]) and reported as a bound hit: such a run proves
//! nothing beyond the bound. With none refused, the search is unbounded
//! source-DPOR (without sleep sets) plus extra backtrack points, and
//! exhausting it explores every trace.

use super::race::Ev;
use super::wakeup::initials;
use super::Node;
use crate::strategy::Context;
use wasmrace_trace::{OpKind, Tid};

/// What the bound needs to know of one state of the current path.
#[derive(Clone, Debug, Default)]
struct Point {
    /// Preemptions the path took to reach this state.
    used: u32,
    /// The thread that ran last, when switching away from it here is a
    /// preemption (it is enabled and did not yield).
    sticky: Option<Tid>,
    /// Threads enabled here, in creation order.
    enabled: Vec<Tid>,
    /// [`Bound::pruned`] when the child being explored here was chosen.
    mark: u64,
}

impl Point {
    /// Preemptions of the path through this state that runs `tid` next.
    fn cost(&self, tid: Tid) -> u32 {
        self.used + u32::from(self.sticky.is_some_and(|s| s != tid))
    }
}

/// The preemption bound of a DPOR search and the states of its current
/// path; see the module documentation.
#[derive(Debug)]
pub(crate) struct Bound {
    limit: u32,
    /// `points[i]`: the state of the path's node at depth `i`.
    points: Vec<Point>,
    pruned: u64,
    conservative: u64,
}

impl Bound {
    /// At most `limit` preemptions per execution.
    pub fn new(limit: u32) -> Bound {
        Bound {
            limit,
            points: Vec::new(),
            pruned: 0,
            conservative: 0,
        }
    }

    /// The bound.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Race reversals not planned because they needed more preemptions
    /// than the bound allows at their state.
    pub fn pruned(&self) -> u64 {
        self.pruned
    }

    /// Conservative backtrack points added.
    pub fn conservative(&self) -> u64 {
        self.conservative
    }

    /// Records the state of a new node at `depth` of the path (the nodes
    /// above it are the path's, recorded before).
    pub fn enter(&mut self, depth: usize, ctx: &Context<'_>) {
        self.points.truncate(depth);
        let used = match (depth.checked_sub(1), ctx.last) {
            (Some(p), Some((t, _))) => self.points.get(p).map_or(0, |prev| prev.cost(t)),
            _ => 0,
        };
        let enabled = |t: Tid| ctx.thread(t).is_some_and(|v| v.pending.enabled);
        let sticky = match ctx.last {
            Some((t, op)) if op != Some(OpKind::Yield) && enabled(t) => Some(t),
            _ => None,
        };
        self.points.resize_with(depth, Point::default);
        self.points.push(Point {
            used,
            sticky,
            mark: self.pruned,
            enabled: ctx
                .threads
                .iter()
                .filter(|v| v.pending.enabled)
                .map(|v| v.tid)
                .collect(),
        });
    }

    /// Whether the child of the node at `depth` just explored pruned
    /// nothing (it may sleep); the next child starts here.
    pub fn child_done(&mut self, depth: usize) -> bool {
        let Some(p) = self.points.get_mut(depth) else {
            return false;
        };
        let clean = p.mark == self.pruned;
        p.mark = self.pruned;
        clean
    }

    /// Whether the node at `depth` can run `tid` within the bound;
    /// counts a refusal.
    pub fn afford(&mut self, depth: usize, tid: Tid) -> bool {
        let ok = self.allows(depth, tid);
        self.pruned += u64::from(!ok);
        ok
    }

    /// Whether running `tid` at the node at depth `at` stays within the
    /// bound.
    fn allows(&self, at: usize, tid: Tid) -> bool {
        self.points
            .get(at)
            .is_some_and(|p| p.cost(tid) <= self.limit)
    }

    /// Plans the reversal `v` of a race whose first event is `events[at]`:
    /// at `at` if affordable (else counted as pruned), and conservatively
    /// at every state of `at`'s block before it (at its start, every
    /// enabled thread when no initial is enabled there). Returns the size
    /// of the largest backtrack set it touched.
    pub fn reverse(&mut self, nodes: &mut [Node], events: &[Ev], at: usize, v: &[&Ev]) -> usize {
        let inits: Vec<Tid> = initials(v).iter().map(|e| e.tid).collect();
        if !self.plan(&mut nodes[at], at, &inits, false) {
            self.pruned += 1;
        }
        let Some(j) = block_start(events, at) else {
            return nodes[at].wut.size();
        };
        let mut largest = nodes[at].wut.size();
        for (m, node) in nodes.iter_mut().enumerate().take(at).skip(j) {
            let enabled = &self.points[m].enabled;
            let here: Vec<Tid> = inits
                .iter()
                .copied()
                .filter(|t| enabled.contains(t))
                .collect();
            let (cands, all) = match here.is_empty() {
                true if m == j => (enabled.clone(), true),
                true => continue,
                false => (here, false),
            };
            let before = node.wut.size();
            self.plan(node, m, &cands, all);
            self.conservative += (node.wut.size() - before) as u64;
            largest = largest.max(node.wut.size());
        }
        largest
    }

    /// Adds to `node`'s backtrack set one of `cands` (every one, with
    /// `all`) that the bound allows at depth `at`, unless one is explored
    /// or planned there already, or asleep (its traces from there were all
    /// explored). Returns whether a candidate is now covered.
    fn plan(&self, node: &mut Node, at: usize, cands: &[Tid], all: bool) -> bool {
        let ok: Vec<Tid> = cands
            .iter()
            .copied()
            .filter(|&t| self.allows(at, t))
            .collect();
        let asleep = |node: &Node, t: Tid| node.sleep.iter().any(|s| s.tid == t);
        let present = |node: &Node, t: Tid| {
            asleep(node, t)
                || node.chosen.is_some_and(|d| d.tid == t)
                || node.explored.contains(&t)
                || node.wut.first_threads().any(|e| e.tid == t)
        };
        let covered = cands.iter().any(|&t| asleep(node, t));
        if !all && (covered || ok.iter().any(|&t| present(node, t))) {
            return true;
        }
        let add: Vec<Tid> = match all {
            true => ok.iter().copied().filter(|&t| !present(node, t)).collect(),
            false => ok.first().copied().into_iter().collect(),
        };
        for t in add {
            // The thread is what a backtrack set holds: `planned` takes
            // its event from the state when it gets there.
            node.wut.push(Ev::new(t, 0, None, &[]));
        }
        covered || !ok.is_empty()
    }
}

/// The conservative backtrack point of a race at `at`: the last state
/// before it where the running thread changed or the previous step
/// yielded (0 when none did), if `at > 0`.
fn block_start(events: &[Ev], at: usize) -> Option<usize> {
    (1..at)
        .rev()
        .find(|&j| {
            let prev = &events[j - 1];
            prev.tid != events[j].tid || prev.op == Some(OpKind::Yield)
        })
        .or((at > 0).then_some(0))
}

#[cfg(test)]
mod tests;
