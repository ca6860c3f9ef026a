//! The stretches the pool keeps (see the parent module): their order by
//! first key, the numbers one run gives executions, the budget's cut, and
//! folding the finished ones into one count.

use super::{ledger, Place, State, SubtreePool, RECUT_EVERY, RECUT_SHARE};
use crate::explorer::{Bug, Report};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// When the stretches are folded and the budget's cut computed again.
impl SubtreePool {
    /// Counts an execution of all workers' against the budget `max`; once
    /// they have run `max`, computes the cut, and lowers it now and then
    /// after ([`RECUT_EVERY`], [`RECUT_SHARE`]: a computation walks every
    /// stretch, or with a shared cache every execution; a cut computed
    /// earlier is higher, which only explores more).
    pub(crate) fn counted(&self, max: u64) {
        let n = self.executions.fetch_add(1, Ordering::Relaxed) + 1;
        if n < max {
            self.fold_if_due(n, max);
        } else {
            self.when_due(n, &self.next_recut, |s| self.recut(s, n, max));
        }
    }

    /// Runs `work` under the lock once `n` executions reach the threshold
    /// `next`, unless another worker just did; `work` says how many
    /// executions later it is due again.
    fn when_due(&self, n: u64, next: &AtomicU64, work: impl FnOnce(&mut State) -> u64) {
        if n < next.load(Ordering::Relaxed) {
            return;
        }
        let mut s = self.lock();
        if n < next.load(Ordering::Relaxed) {
            return; // another worker just did it
        }
        let every = work(&mut s);
        next.store(n + every, Ordering::Relaxed);
    }

    /// Folds the finished stretches (without a shared cache) when `n`
    /// executions are counted, if a folding is due by then.
    fn fold_if_due(&self, n: u64, max: u64) {
        if self.cached().is_some() {
            return;
        }
        self.when_due(n, &self.next_fold, |s| {
            s.fold_finished(max);
            (s.stretches.len() as u64 / self.fold_share).max(self.fold_every)
        });
    }

    /// Computes the budget `max`'s cut again once `n` executions are
    /// counted, lowering it if it moved; returns when it is due again.
    fn recut(&self, s: &mut State, n: u64, max: u64) -> u64 {
        s.order();
        let (cut, every) = match self.cached() {
            None => {
                let stretches = s.stretches.len() as u64;
                (
                    State::cut_at(s.folded, s.sorted(), max),
                    stretches / RECUT_SHARE,
                )
            }
            // Counting by logs walks every execution: less and less often.
            Some(visits) => {
                s.budget = max;
                (ledger::Ledger::new(s, &visits.dead()).cut(max), n / 8)
            }
        };
        if let Some(cut) = cut {
            if s.cut.as_ref().is_none_or(|c| cut < *c) {
                s.cut = Some(cut);
                self.threshold_moves.fetch_add(1, Ordering::Release);
            }
        }
        every.max(RECUT_EVERY)
    }
}

impl State {
    /// Sorts the stretches by first key, unless they are (`by_key`).
    pub(super) fn order(&mut self) {
        if self.by_key.is_none() {
            let sorted = self.stretches.iter();
            let keys = sorted.map(|(i, t)| (Arc::clone(&t.first), *i)).collect();
            self.by_key = Some(keys);
        }
    }

    /// The stretches' indices by first key (after `order`).
    pub(super) fn in_order(&self) -> impl Iterator<Item = usize> + '_ {
        debug_assert!(self.by_key.is_some(), "stretches not ordered");
        self.by_key.iter().flatten().map(|(_, i)| *i)
    }

    /// The stretches by first key, with their counts.
    pub(super) fn sorted(&self) -> impl Iterator<Item = (&[u32], u64)> + '_ {
        self.in_order().map(|i| {
            let t = &self.stretches[&i];
            (&*t.first, t.count.load(Ordering::Relaxed))
        })
    }

    /// The first key of the stretch holding the `max`-th execution, given
    /// the executions folded before them and the stretches by first key
    /// with their counts.
    pub(super) fn cut_at<'k>(
        folded: u64,
        sorted: impl IntoIterator<Item = (&'k [u32], u64)>,
        max: u64,
    ) -> Option<Vec<u32>> {
        let mut total = folded;
        for (first, count) in sorted {
            total += count;
            if total >= max {
                return Some(first.to_vec());
            }
        }
        None
    }

    /// Every worker's bugs, each numbered as one run numbers it (by its
    /// order key's place in `failures`), in that order, the least `keep`;
    /// those one run does not find (below a killed expansion) left out.
    pub(super) fn numbered(
        &self,
        numbers: &ledger::Numbers<'_>,
        reports: &[Report],
        keep: usize,
    ) -> Vec<Bug> {
        let mut bugs: Vec<Bug> = Vec::new();
        for mut b in reports.iter().flat_map(|r| r.bugs.clone()) {
            let place = b
                .order_key
                .as_ref()
                .and_then(|k| Some((k, self.failures.get(k)?)));
            if let Some((key, place)) = place {
                match numbers.number(key, *place) {
                    Some(n) => b.execution = n,
                    None => continue,
                }
            }
            bugs.push(b);
        }
        bugs.sort_by_key(|b| b.execution);
        bugs.truncate(keep);
        bugs
    }

    /// The number one run gives the execution at `place`, whose key is
    /// `key`: the executions of the stretches ordered before its own (the
    /// folded ones all are), plus its place in its own.
    pub(super) fn number(&self, key: &[u32], place: Place) -> u64 {
        if let Some(&n) = self.folded_numbers.get(&place) {
            return n;
        }
        let before: u64 = (self.stretches.iter())
            .filter(|(i, t)| **i != place.0 && &*t.first < key)
            .map(|(_, t)| t.count.load(Ordering::Relaxed))
            .sum();
        self.folded + before + place.1
    }

    /// The executions counted so far, folded or not.
    pub(super) fn total(&self) -> u64 {
        let open: u64 = (self.stretches.values())
            .map(|t| t.count.load(Ordering::Relaxed))
            .sum();
        self.folded + open
    }

    /// Folds the stretches wholly before the frontier into `folded`,
    /// numbering first the bugs and prunes they hold; nothing when that
    /// would fold the budget `max`'s last execution (its cut needs the
    /// key of its stretch). See the module documentation.
    ///
    /// A stretch is a run of consecutive executions, done or still
    /// running, and the frontier is the least key of the work still to
    /// come, none of which lies inside a stretch: so a stretch whose first
    /// key is below the frontier lies wholly before it, and is finished.
    pub(super) fn fold_finished(&mut self, max: u64) {
        let waiting = self.waiting.keys().next().map(Vec::as_slice);
        let frontier = (self.frontier.values().map(|k| &**k))
            .chain(waiting)
            .min()
            .map(<[u32]>::to_vec);
        // Nothing runs and nothing waits: the run is over.
        let Some(frontier) = frontier else {
            return;
        };
        let fold: Vec<usize> = (self.stretches.iter())
            .filter(|(_, t)| *t.first < *frontier)
            .map(|(i, _)| *i)
            .collect();
        let executions: u64 = (fold.iter())
            .map(|i| self.stretches[i].count.load(Ordering::Relaxed))
            .sum();
        if fold.is_empty() || self.folded + executions >= max {
            return;
        }
        let held = (self.best.iter().chain(&self.pruned))
            .map(|(key, place)| (key, *place))
            .chain(self.failures.iter().map(|(key, place)| (key, *place)));
        // `fold` is in index order, as `stretches` is.
        let numbers: Vec<(Place, u64)> = held
            .filter(|(_, place)| fold.binary_search(&place.0).is_ok())
            .map(|(key, place)| (place, self.number(key, place)))
            .collect();
        self.folded_numbers.extend(numbers);
        for i in fold {
            let t = self.stretches.remove(&i).expect("listed above");
            if let Some(by_key) = &mut self.by_key {
                by_key.remove(&(t.first, i));
            }
        }
        self.folded += executions;
    }
}
