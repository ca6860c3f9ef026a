//! How the pool numbers executions as one run does: by the stretches'
//! counts, or, when the workers share a state cache, by the stretches'
//! logs, counting each execution as one thread would have it
//! ([`Logged::fate`]): as it ran, or pruned at an expansion killed since
//! (one thread visits that state there and prunes), or not at all (below a
//! killed expansion; see `visits.rs`).

use super::{Place, State};
use crate::explorer::visits::{ExpId, Fate, Logged, NO_EXPANSION};
use std::collections::HashSet;

/// A shared-cache run's executions, counted from the stretches' logs
/// with the expansions killed so far.
pub(super) struct Ledger<'a> {
    s: &'a State,
    dead: &'a HashSet<ExpId>,
    /// Stretch indices by first key.
    order: Vec<usize>,
    /// One thread's executions in each stretch (by index).
    counted: Vec<u64>,
}

impl<'a> Ledger<'a> {
    /// Counts every stretch's executions as one thread has them, the
    /// expansions in `dead` killed.
    pub(super) fn new(s: &'a State, dead: &'a HashSet<ExpId>) -> Self {
        let order: Vec<usize> = s.in_order().collect();
        let mut ledger = Ledger {
            s,
            dead,
            order,
            counted: Vec::new(),
        };
        // Nothing is folded with a shared cache: indices are dense.
        ledger.counted = (0..s.next_stretch)
            .map(|i| {
                let log = ledger.log(i);
                log.iter().filter(|e| ledger.counts(e)).count() as u64
            })
            .collect();
        ledger
    }

    fn alive(&self, id: ExpId) -> bool {
        id == NO_EXPANSION || !self.dead.contains(&id)
    }

    fn fate(&self, e: &Logged) -> Fate {
        e.fate(|id| self.alive(id))
    }

    fn counts(&self, e: &Logged) -> bool {
        self.fate(e) != Fate::Elsewhere
    }

    fn log(&self, stretch: usize) -> std::sync::MutexGuard<'_, Vec<Logged>> {
        let log = self.s.stretches[&stretch].log.as_ref();
        // The cache is shared before any stretch opens.
        crate::explorer::visits::lock(log.expect("with a shared cache every stretch logs"))
    }

    /// One thread's executions.
    pub(super) fn total(&self) -> u64 {
        self.counted.iter().sum()
    }

    /// The first key of the stretch holding one thread's `max`-th
    /// execution (the budget's cut), if they ran that many.
    pub(super) fn cut(&self, max: u64) -> Option<Vec<u32>> {
        let sorted = self
            .order
            .iter()
            .map(|&i| (&*self.s.stretches[&i].first, self.counted[i]));
        State::cut_at(0, sorted, max)
    }

    /// One thread's number for the execution at `place`; `None` when one
    /// thread does not run it as it ran here.
    pub(super) fn number(&self, (stretch, at): Place) -> Option<u64> {
        let log = self.log(stretch);
        let here = log.get(usize::try_from(at).ok()?.checked_sub(1)?)?;
        if self.fate(here) != Fate::Same {
            return None;
        }
        let first = &self.s.stretches[&stretch].first;
        let before: u64 = (self.order.iter())
            .filter(|&&i| self.s.stretches[&i].first < *first)
            .map(|&i| self.counted[i])
            .sum();
        let within = log[..at as usize].iter().filter(|e| self.counts(e)).count() as u64;
        Some(before + within)
    }

    /// Every logged execution in the search order, with one thread's
    /// executions before it and its fate.
    fn walk(&self, mut each: impl FnMut(u64, &Logged, Fate)) {
        let mut n = 0;
        for &i in &self.order {
            for e in self.log(i).iter() {
                let fate = self.fate(e);
                each(n, e, fate);
                n += u64::from(fate != Fate::Elsewhere);
            }
        }
    }

    /// The number of one thread's first execution during which the
    /// strategy's own bound pruned (at one of the expansions it made).
    pub(super) fn first_bound_pruned(&self) -> Option<u64> {
        let mut first = None;
        self.walk(|before, e, fate| {
            let made = match fate {
                Fate::Same => e.created,
                Fate::PrunedAt(k) => k,
                Fate::Elsewhere => 0,
            };
            if first.is_none() && e.pruned_at < made {
                first = Some(before + 1);
            }
        });
        first
    }

    /// One thread's counters after its first `last` executions: states
    /// explored (each alive expansion counted at the execution that made
    /// it, whose place in one thread's order is that of the first of one
    /// thread's executions below it) and cache hits.
    pub(super) fn tally(&self, last: u64) -> (u64, u64) {
        let (mut states, mut hits) = (0, 0);
        self.walk(|before, e, fate| {
            if before >= last {
                return;
            }
            states += (0..u64::from(e.created))
                .filter(|k| self.alive(e.first + k))
                .count() as u64;
            hits += u64::from(match fate {
                Fate::Same => e.flags & Logged::CACHE_HIT != 0,
                Fate::PrunedAt(_) => true,
                Fate::Elsewhere => false,
            });
        });
        (states, hits)
    }
}
/// How a pool numbers its executions: by the stretches' counts, or by
/// their logs ([`Ledger`]).
pub(super) enum Numbers<'a> {
    /// Every execution counts.
    Plain(&'a State),
    /// Only one thread's.
    Logged(Ledger<'a>),
}

impl Numbers<'_> {
    /// The executions one run has.
    pub(super) fn total(&self) -> u64 {
        match self {
            Numbers::Plain(s) => s.total(),
            Numbers::Logged(l) => l.total(),
        }
    }

    /// One run's number for the execution at `place` whose key is `key`;
    /// `None` when one run does not run it.
    pub(super) fn number(&self, key: &[u32], place: Place) -> Option<u64> {
        match self {
            Numbers::Plain(s) => Some(s.number(key, place)),
            Numbers::Logged(l) => l.number(place),
        }
    }

    /// The number of one run's first execution during which the
    /// strategy's own bound pruned.
    pub(super) fn first_pruned(&self) -> Option<u64> {
        match self {
            Numbers::Plain(s) => (s.pruned.as_ref()).map(|(key, place)| s.number(key, *place)),
            Numbers::Logged(l) => l.first_bound_pruned(),
        }
    }
}
