//! DFS as one of several workers sharing the search tree
//! ([`SubtreePool`], `check --jobs`): what it donates, what it abandons
//! after a bug, and how it starts a subtree another worker donated.
//!
//! A worker's own work is its frames (the current subtree's untried
//! alternatives) and its deferred subtrees (`s_current`, `s_next`); it asks
//! the pool only when it has none left, so a worker's deferred subtrees
//! always belong to the iteration after the one it explores, as in the
//! single search. Every subtree is explored exactly as the single search
//! explores it (the same frames, the same deferrals, the same prunes), so
//! the union over workers is the single search.
//!
//! A worker donates the untried alternatives of one frame (see `donate`
//! for which). They come after everything below that frame's current
//! alternative, and before the alternatives of shallower frames: once the
//! worker drops the frame and moves on above it, its executions follow the
//! donated ones in the search order, so it starts a new stretch there
//! (`Frame::donated`, `Dfs::jumped`), and stretches stay consecutive runs
//! of the search order.

use super::{key_of, Arena, Deferred, Dfs, NodeId, NIL};
use crate::explorer::steal::{Later, Subtree, SubtreePool, Taken};
use crate::explorer::visits::ExpId;
use crate::strategy::Start;
use wasmrace_trace::Decision;

/// Deferred subtrees donated at once at most (see `Dfs::donate`): enough
/// to keep a taker busy for a while, few enough that the pool does not
/// hold a copy of half a bounded search's deferred work (on `condvar_pc`
/// under bound 3 on two threads, 155 MB of paths at the peak).
const MAX_DEFERRED_GIFT: usize = 256;

impl Dfs {
    /// Between two executions: drops the work a published bug makes
    /// useless, and donates when another worker waits for work.
    pub(super) fn share_work(&mut self, pool: &SubtreePool) {
        self.drop_dead();
        if let Some(threshold) = pool.threshold_moved(&mut self.threshold_seen) {
            self.threshold = threshold;
        }
        self.abandon_frames_after_threshold(pool);
        if pool.hungry() {
            let given = self.donate();
            pool.give(given);
        }
    }

    /// Drops the current subtree's untried alternatives when the last
    /// execution already came after the threshold (a bug's key, or the
    /// budget's cut): the rest of a subtree follows in the search order.
    ///
    /// Deferred subtrees are checked one by one as they would start
    /// ([`after_threshold`](Self::after_threshold)), not all whenever the
    /// threshold moves: a budget's cut moves every few hundred executions,
    /// and a bounded search defers a hundred thousand subtrees and more
    /// (`condvar_pc` under bound 3 on two threads spent three quarters of
    /// its time filtering them).
    fn abandon_frames_after_threshold(&mut self, pool: &SubtreePool) {
        let Some(best) = &self.threshold else {
            return;
        };
        let untried = self.frames.iter().any(|f| f.next < f.alts.len());
        let late = || self.order_key().as_slice() > best.as_slice();
        if !untried || !late() {
            return;
        }
        if self.shared.is_some() {
            self.park_frames(pool);
        } else {
            while !self.frames.is_empty() {
                self.pop_frame();
            }
            self.tell_abandoned(pool);
        }
        self.gap = true;
    }

    /// Whether the deferred subtree below `steps` comes entirely after the
    /// threshold.
    pub(super) fn after_threshold(&self, steps: &[(Decision, u32)]) -> bool {
        self.threshold
            .as_ref()
            .is_some_and(|best| key_of(steps.iter().map(|(_, m)| *m)) > *best)
    }

    /// Sets aside the deferred subtree of the current iteration below
    /// `steps` (`entry`'s), after the threshold: parked in the pool with a
    /// shared cache (see `shared_cache.rs`), dropped otherwise.
    pub(super) fn set_aside(&mut self, entry: Deferred, steps: Vec<(Decision, u32)>) {
        self.gap = true;
        let pool = self.pool.clone().expect("only a worker has a threshold");
        if self.shared.is_some() {
            let subtree = subtree(steps, self.iteration, entry.exp, Vec::new());
            pool.give(vec![subtree]);
        } else {
            self.tell_abandoned(&pool);
        }
        self.arena.release(entry.node);
    }

    /// Tells the pool, once, that this worker dropped work after the
    /// threshold (the run is not exhausted).
    fn tell_abandoned(&mut self, pool: &SubtreePool) {
        if !std::mem::replace(&mut self.told_abandoned, true) {
            pool.abandoned();
        }
    }

    /// Work for idle workers: the untried alternatives of the middle one
    /// of the frames that have some (all but the one the next execution
    /// takes, when it is the deepest), else the later half of the next
    /// deferred subtrees, as one run ([`later_half`]).
    ///
    /// Why the middle: the shallowest frame's subtrees are the largest but
    /// lie far ahead in the search order, and with a shared state cache
    /// the worker that keeps the earlier work reaches most of their states
    /// first, killing what the other explored (`two_phase_commit_2` on two
    /// threads ran 130,000 executions to keep 79,412); the deepest frame's
    /// are near but small, so workers hand over again and again. The
    /// middle ran 83,000 to 103,000 there, in 1.4 to 1.8 s against 2.2 to
    /// 2.7 s, and was as fast or faster on plain dfs (`condvar_pc`).
    fn donate(&mut self) -> Vec<Subtree> {
        let open: Vec<usize> = (0..self.frames.len())
            .filter(|&k| self.frames[k].next < self.frames[k].alts.len())
            .collect();
        if let (Some(&i), Some(&deepest)) = (open.get(open.len() / 2), open.last()) {
            let from = self.frames[i].next + usize::from(i == deepest);
            if from < self.frames[i].alts.len() {
                return self.donate_alternatives(i, from);
            }
        }
        let (list, iteration, from_end) = if self.s_current.is_empty() {
            // The next deferral may follow an entry given away.
            self.deferred_in = None;
            (&mut self.s_next, self.iteration + 1, false)
        } else {
            (&mut self.s_current, self.iteration, true)
        };
        let run = later_half(list, from_end);
        if run.is_empty() {
            return Vec::new();
        }
        vec![self.deferred_run(run, iteration)]
    }

    /// The subtrees of a run of deferred prefixes, in the order they run,
    /// as one unit for another worker (or the pool).
    fn deferred_run(&mut self, run: Vec<Deferred>, iteration: u32) -> Subtree {
        let mut run = run.into_iter();
        let first = run.next().expect("a run is never empty");
        let steps = self.arena.prefix(first.node);
        self.arena.release(first.node);
        let then = run
            .map(|entry| {
                let steps = self.arena.prefix(entry.node);
                self.arena.release(entry.node);
                Later {
                    steps,
                    exp: entry.exp,
                    follows: entry.follows,
                }
            })
            .collect();
        subtree(steps, iteration, first.exp, then)
    }

    /// Donates the alternatives of frame `i` from `from` on: each the
    /// subtree below the current path's first decisions plus it.
    pub(super) fn donate_alternatives(&mut self, i: usize, from: usize) -> Vec<Subtree> {
        let depth = self.forced.len() + i;
        let prefix: Vec<(Decision, u32)> = self.path[..depth]
            .iter()
            .copied()
            .zip(self.marks[..depth].iter().copied())
            .collect();
        let frame = &mut self.frames[i];
        frame.donated = true;
        let exp = frame.exp;
        let given = frame.alts.split_off(from);
        given
            .into_iter()
            .enumerate()
            .map(|(r, d)| {
                let mut steps = prefix.clone();
                // A frame's alternatives are never preemptions: rank only.
                steps.push((d, ((from + r) as u32) << 1));
                subtree(steps, self.iteration, exp, Vec::new())
            })
            .collect()
    }

    /// With no work of its own: the next subtree from the pool, or `None`
    /// when the run is over.
    pub(super) fn take_subtree(&mut self, pool: &SubtreePool) -> Option<Start> {
        match pool.take() {
            Taken::Subtree(t) => {
                self.stretch += 1;
                (self.jumped, self.gap) = (false, false);
                self.iteration = t.iteration;
                if self.base_node != NIL {
                    self.arena.release(self.base_node);
                }
                // Interned so that subtrees deferred below it share it;
                // the rest of its run waits as this iteration's deferred
                // subtrees (a worker takes only with none of its own).
                debug_assert!(self.s_current.is_empty() && self.s_next.is_empty());
                let mut chain = Vec::new();
                self.base_node = intern(&mut self.arena, &mut chain, &t.steps);
                self.base_exp = t.exp;
                self.forced = t.steps.iter().map(|(d, _)| *d).collect();
                for later in &t.then {
                    let node = intern(&mut self.arena, &mut chain, &later.steps);
                    self.s_current.push(Deferred {
                        node,
                        exp: later.exp,
                        follows: later.follows,
                    });
                }
                self.s_current.reverse();
                Some(self.enter_forced())
            }
            Taken::Done { exhausted } => {
                self.left = true;
                self.exhausted = exhausted;
                None
            }
            Taken::Stopped => {
                self.left = true;
                None
            }
        }
    }
}

/// The subtree below `steps` of `iteration`, keyed by its steps' marks,
/// with the run `then` after it.
fn subtree(steps: Vec<(Decision, u32)>, iteration: u32, exp: ExpId, then: Vec<Later>) -> Subtree {
    let key = key_of(steps.iter().map(|(_, m)| *m));
    Subtree {
        steps,
        iteration,
        key,
        exp,
        then,
        payload: None,
    }
}

/// `steps` interned in `arena`, held once, sharing the nodes of `chain`
/// (the nodes of the prefix interned before, root first) as far as the
/// two agree; `chain` becomes this prefix's nodes. The subtrees of a run
/// share most of their prefixes.
fn intern(arena: &mut Arena, chain: &mut Vec<NodeId>, steps: &[(Decision, u32)]) -> NodeId {
    let common = chain
        .iter()
        .zip(steps)
        .take_while(|(&n, step)| arena.nodes[n as usize].item == **step)
        .count();
    chain.truncate(common);
    if common == steps.len() {
        let node = chain.last().copied().unwrap_or(NIL);
        arena.hold(node);
        return node;
    }
    // The new nodes below the shared ones are held by their children but
    // the last, which the caller holds.
    let mut node = chain.last().copied().unwrap_or(NIL);
    for (i, step) in steps[common..].iter().enumerate() {
        let child = arena.push(node, *step);
        if i > 0 {
            arena.release(node);
        }
        node = child;
        chain.push(node);
    }
    node
}

/// The later half of the first `2 * MAX_DEFERRED_GIFT` deferred subtrees
/// `list` runs (from its end when `from_end`: `s_current` pops, `s_next` is
/// reversed first), in the order they run (all of a list of one); the
/// donor keeps the earlier half and everything after the first
/// `2 * MAX_DEFERRED_GIFT`.
///
/// One run rather than single subtrees: a subtree handed over alone cost
/// a take of the pool and a stretch of its own, and so did the one the
/// donor ran after it. A deferred subtree runs two executions or so under
/// a bound; `condvar_pc` under bound 3 on two threads took 71,000
/// subtrees from the pool and opened 142,000 stretches, given every other
/// subtree, and took 1.32x one thread's CPU time. Given alternate runs
/// of 16, two threads were 1.59x as fast as one (median of 7); of 64,
/// 1.76x; the later half as one run, 1.82x. A budget's
/// cut, which the pool knows only once the budget is spent, lost as much
/// work past it either way (bound 3, default budget: 130,000 to 145,000
/// executions run to keep 100,000).
fn later_half(list: &mut Vec<Deferred>, from_end: bool) -> Vec<Deferred> {
    let n = list.len();
    if n <= 1 {
        return std::mem::take(list);
    }
    let span = n.min(2 * MAX_DEFERRED_GIFT);
    let keep = span - span / 2;
    // In the order they run: `range` of `list`, reversed when `from_end`.
    let range = if from_end {
        n - span..n - keep
    } else {
        keep..span
    };
    let mut gift: Vec<Deferred> = list.drain(range).collect();
    if from_end {
        gift.reverse();
    }
    gift[0].follows = false;
    // The entry run after the gift no longer follows the one before it.
    let next = if from_end {
        (n - span).checked_sub(1).map(|i| &mut list[i])
    } else {
        list.get_mut(keep)
    };
    if let Some(entry) = next {
        entry.follows = false;
    }
    gift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(nodes: impl IntoIterator<Item = u32>) -> Vec<Deferred> {
        let entry = |node| Deferred {
            node,
            exp: 0,
            follows: true,
        };
        nodes.into_iter().map(entry).collect()
    }

    fn nodes(list: &[Deferred]) -> Vec<u32> {
        list.iter().map(|d| d.node).collect()
    }

    /// The donor keeps the earlier half of the first
    /// `2 * MAX_DEFERRED_GIFT` entries it would run and everything after,
    /// in order; the taker gets the later half, as it runs.
    #[test]
    fn a_gift_of_deferred_subtrees_is_the_later_half_as_one_run() {
        let follows = |list: &[Deferred]| list.iter().map(|d| d.follows).collect::<Vec<_>>();
        // `s_current` runs from its end: 4 first, then 3, 2, 1, 0. The
        // entry run after the gift no longer follows the entry run before
        // it, which is given away.
        let mut current = list(0..5);
        let gift = later_half(&mut current, true);
        assert_eq!(nodes(&gift), [1, 0]);
        assert_eq!(follows(&gift), [false, true]);
        assert_eq!(nodes(&current), [2, 3, 4]);
        assert_eq!(follows(&current), [true, true, true]);
        // `s_next` runs from its front.
        let mut next = list(0..5);
        assert_eq!(nodes(&later_half(&mut next, false)), [3, 4]);
        assert_eq!(nodes(&next), [0, 1, 2]);
        // Past the first 2 * MAX_DEFERRED_GIFT, from either end.
        let n = 2 * MAX_DEFERRED_GIFT as u32 + 3;
        let mut long = list(0..n);
        let gift = later_half(&mut long, false);
        let g = MAX_DEFERRED_GIFT as u32;
        assert_eq!(nodes(&gift), (g..2 * g).collect::<Vec<_>>());
        assert_eq!(nodes(&long), (0..g).chain(2 * g..n).collect::<Vec<_>>());
        assert_eq!(
            follows(&long)[g as usize - 1..g as usize + 2],
            [true, false, true]
        );
        let mut long = list(0..n);
        let gift = later_half(&mut long, true);
        assert_eq!(nodes(&gift), (3..g + 3).rev().collect::<Vec<_>>());
        assert_eq!(nodes(&long), (0..3).chain(g + 3..n).collect::<Vec<_>>());
        assert_eq!(follows(&long)[..4], [true, true, false, true]);
        let mut one = list([7]);
        assert_eq!(nodes(&later_half(&mut one, true)), [7]);
        assert!(one.is_empty());
        assert!(later_half(&mut one, true).is_empty());
    }

    /// A run's prefixes share the nodes they have in common, and each is
    /// held once: releasing them all frees every node.
    #[test]
    fn a_run_interns_its_prefixes_sharing_nodes() {
        let d = |t: u64| (Decision::new(wasmrace_trace::Tid(t), 0), 0);
        let mut arena = Arena::default();
        let mut chain = Vec::new();
        let a = intern(&mut arena, &mut chain, &[d(1), d(2), d(3)]);
        let b = intern(&mut arena, &mut chain, &[d(1), d(2), d(4)]);
        let c = intern(&mut arena, &mut chain, &[d(1), d(5)]);
        assert_eq!(arena.live, 5, "1, 2, 3, 4 and 5");
        assert_eq!(arena.prefix(b), vec![d(1), d(2), d(4)]);
        assert_eq!(arena.prefix(c), vec![d(1), d(5)]);
        let again = intern(&mut arena, &mut chain, &[d(1)]);
        for node in [a, b, c, again] {
            arena.release(node);
        }
        assert_eq!(arena.live, 0);
    }
}
