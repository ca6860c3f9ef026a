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

use super::{key_of, Deferred, Dfs, NIL};
use crate::explorer::steal::{Subtree, SubtreePool, Taken};
use crate::strategy::{Splitting, Start};
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
        let late = || {
            self.order_key()
                .is_some_and(|k| k.as_slice() > best.as_slice())
        };
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
            let key = key_of(steps.iter().map(|(_, m)| *m));
            let subtree = Subtree {
                steps,
                iteration: self.iteration,
                key,
                exp: entry.exp,
            };
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
    /// takes, when it is the deepest), else every other one of the next
    /// deferred subtrees ([`every_other`]).
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
        every_other(list, from_end)
            .into_iter()
            .map(|entry| self.deferred_subtree(entry, iteration))
            .collect()
    }

    /// The subtree of a deferred prefix, for another worker (or the pool).
    fn deferred_subtree(&mut self, entry: Deferred, iteration: u32) -> Subtree {
        let steps = self.arena.prefix(entry.node);
        self.arena.release(entry.node);
        let key = key_of(steps.iter().map(|(_, m)| *m));
        Subtree {
            steps,
            iteration,
            key,
            exp: entry.exp,
        }
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
                let key = key_of(steps.iter().map(|(_, m)| *m));
                Subtree {
                    steps,
                    iteration: self.iteration,
                    key,
                    exp,
                }
            })
            .collect()
    }

    /// With no work of its own: the next subtree from the pool, or `None`
    /// when the run is over.
    pub(super) fn take_subtree(&mut self, pool: &SubtreePool) -> Option<Start> {
        match pool.take() {
            Taken::Subtree(t) => {
                self.stretch += 1;
                self.jumped = false;
                self.iteration = t.iteration;
                if self.base_node != NIL {
                    self.arena.release(self.base_node);
                }
                // Interned so that subtrees deferred below it share it.
                let mut node = NIL;
                for step in &t.steps {
                    let child = self.arena.push(node, *step);
                    if node != NIL {
                        self.arena.release(node);
                    }
                    node = child;
                }
                self.base_node = node;
                self.base_exp = t.exp;
                self.forced = t.steps.iter().map(|(d, _)| *d).collect();
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

/// Every other one of the first `2 * MAX_DEFERRED_GIFT` deferred subtrees
/// `list` runs (from its end when `from_end`: `s_current` pops, `s_next` is
/// reversed first), the second to run first; all of a list of one.
///
/// So the donor and the taker go through the list's order side by side.
/// A budget's cut falls somewhere in it, and the pool knows where only
/// once the budget is spent: work a worker ran past it is lost. Given the
/// far half of the list, the taker ran past it while the donor had not
/// reached it: `condvar_pc` under bound 3 with the default budget of
/// 100,000 ran 171,000 to 187,000 executions on two threads, and 131,000
/// to 136,000 so (exhaustive runs took as long either way).
fn every_other(list: &mut Vec<Deferred>, from_end: bool) -> Vec<Deferred> {
    let n = list.len();
    if n <= 1 {
        return std::mem::take(list);
    }
    let span = n.min(2 * MAX_DEFERRED_GIFT);
    let range = if from_end { n - span..n } else { 0..span };
    let mut region: Vec<Deferred> = list.drain(range).collect();
    if from_end {
        region.reverse();
    }
    let (mut keep, mut gift) = (Vec::with_capacity(span.div_ceil(2)), Vec::new());
    for (i, mut entry) in region.into_iter().enumerate() {
        match i % 2 {
            0 => {
                // The entry run before it is given away (but the first's).
                entry.follows &= i == 0;
                keep.push(entry);
            }
            _ => gift.push(entry),
        }
    }
    // So is the region's last when its length is even: the entry run
    // after the region no longer follows the one before it.
    if span.is_multiple_of(2) {
        let next = if from_end {
            list.last_mut()
        } else {
            list.first_mut()
        };
        if let Some(entry) = next {
            entry.follows = false;
        }
    }
    if from_end {
        keep.reverse();
        list.extend(keep);
    } else {
        list.splice(0..0, keep);
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

    /// The donor keeps the first, third, ... entries it would run, the
    /// taker gets the second, fourth, ...; past the first
    /// `2 * MAX_DEFERRED_GIFT`, the donor keeps them all, in order.
    #[test]
    fn a_gift_of_deferred_subtrees_takes_every_other_one_to_run() {
        let follows = |list: &[Deferred]| list.iter().map(|d| d.follows).collect::<Vec<_>>();
        // `s_current` runs from its end: 4 first, then 3, 2, 1, 0. The
        // kept entries after the first no longer follow the entry run
        // before them, which is given away.
        let mut current = list(0..5);
        assert_eq!(nodes(&every_other(&mut current, true)), [3, 1]);
        assert_eq!(nodes(&current), [0, 2, 4]);
        assert_eq!(follows(&current), [false, false, true]);
        // `s_next` runs from its front.
        let mut next = list(0..5);
        assert_eq!(nodes(&every_other(&mut next, false)), [1, 3]);
        assert_eq!(nodes(&next), [0, 2, 4]);
        assert_eq!(follows(&next), [true, false, false]);
        // An even region gives its last away: the entry after it does not
        // follow it either.
        let n = 2 * MAX_DEFERRED_GIFT as u32 + 2;
        let mut after = list(0..n);
        every_other(&mut after, true);
        assert_eq!(follows(&after)[..3], [true, false, false]);
        let mut one = list([7]);
        assert_eq!(nodes(&every_other(&mut one, true)), [7]);
        assert!(one.is_empty());
        let n = 2 * MAX_DEFERRED_GIFT as u32 + 3;
        let mut long = list(0..n);
        let gift = every_other(&mut long, false);
        assert_eq!(gift.len(), MAX_DEFERRED_GIFT);
        assert_eq!(nodes(&gift)[..2], [1, 3]);
        let kept = nodes(&long);
        assert_eq!(kept.len(), n as usize - MAX_DEFERRED_GIFT);
        assert!(kept.windows(2).all(|w| w[0] < w[1]), "in order");
        assert_eq!(kept[kept.len() - 3..], [n - 3, n - 2, n - 1]);
    }
}
