//! DFS with a state cache shared between workers (`check --jobs` with
//! `--state-cache`, [`SharedVisits`]): each visit asks the shared cache,
//! each execution is logged for the pool, work below an expansion another
//! worker killed is dropped (none of it is one thread's), and work after
//! the budget's cut is handed to the pool to park instead of dropped.

use super::{key_of, Dfs};
use crate::explorer::steal::SubtreePool;
use crate::explorer::visits::{ExpId, Logged, SharedVisits, Visit, NO_EXPANSION};
use crate::strategy::BoundHit;
use std::sync::Arc;

/// A worker's side of the shared cache.
#[derive(Debug)]
pub(super) struct SharedCache {
    visits: Arc<SharedVisits>,
    /// This worker's slot in expansion ids.
    slot: u64,
    /// Expansions this worker made so far.
    made: u64,
    /// `visits.kills()` when the path was last checked for killed
    /// expansions.
    seen_kills: u64,
    /// The current execution as the pool logs it (`leaf` aside).
    pub(super) logged: Logged,
}

impl SharedCache {
    /// A worker of `visits`.
    pub(super) fn new(visits: Arc<SharedVisits>) -> Self {
        let slot = visits.slot();
        SharedCache {
            visits,
            slot,
            made: 0,
            seen_kills: 0,
            logged: Logged::new(),
        }
    }
}

impl Dfs {
    /// The deepest expansion on the current path.
    pub(super) fn leaf(&self) -> ExpId {
        self.frames.last().map_or(self.base_exp, |f| f.exp)
    }

    /// The visit at depth `depth` of the state whose cache key is `key`,
    /// counted as a state explored or a cache hit: the deepest expansion
    /// on the path once it is expanded (its own with a shared cache),
    /// `None` when it is pruned (or the shared cache is full, which stops
    /// the run).
    pub(super) fn visit(&mut self, key: [u8; 32], depth: usize) -> Option<ExpId> {
        let parent = self.leaf();
        let Some(shared) = &mut self.shared else {
            let new = self.cache.as_mut().is_some_and(|c| c.insert(key));
            self.cache_states += u64::from(new);
            self.cache_hits += u64::from(!new);
            return new.then_some(NO_EXPANSION);
        };
        let id = SharedVisits::id(shared.slot, shared.made);
        let node = key_of(self.marks[..depth].iter().copied());
        match shared.visits.visit(key, &node, id) {
            Visit::Expand(id) => {
                shared.made += 1;
                if shared.logged.created == 0 {
                    shared.logged.first = id;
                    shared.logged.parent = parent;
                }
                shared.logged.created += 1;
                self.cache_states += 1;
                Some(id)
            }
            Visit::Prune => {
                shared.logged.flags |= Logged::CACHE_HIT;
                self.cache_hits += 1;
                None
            }
            Visit::Full => {
                self.full();
                None
            }
        }
    }

    /// Notes that the strategy's bound pruned alternatives at the expansion
    /// just made (the pool needs the first execution that did).
    pub(super) fn note_bound_pruned(&mut self) {
        if let Some(shared) = &mut self.shared {
            let at = shared.logged.created.saturating_sub(1);
            shared.logged.pruned_at = shared.logged.pruned_at.min(at);
        }
    }

    /// Stops every worker: the shared cache cannot hold another state.
    fn full(&mut self) {
        self.left = true;
        let mb = self.shared.as_ref().map_or(0, |s| s.visits.cache_mb());
        if let Some(pool) = &self.pool {
            pool.stop_at(BoundHit {
                bound: "shared state cache (MiB)",
                value: mb,
                knob: "--cache-mb",
            });
        }
    }

    /// Before an execution: a fresh log entry, charged to the cache;
    /// false when the cache is full (the run stops).
    pub(super) fn log_next(&mut self) -> bool {
        let Some(shared) = &mut self.shared else {
            return true;
        };
        shared.logged = Logged::new();
        if shared.visits.charge_log() {
            return true;
        }
        self.full();
        false
    }

    /// Drops the work below expansions other workers killed since the last
    /// look: its executions are not one thread's.
    pub(super) fn drop_dead(&mut self) {
        let Some(shared) = &mut self.shared else {
            return;
        };
        let kills = shared.visits.kills();
        if kills == shared.seen_kills {
            return;
        }
        shared.seen_kills = kills;
        let visits = Arc::clone(&shared.visits);
        let dead = visits.dead();
        let from = if dead.contains(&self.base_exp) {
            Some(0)
        } else {
            self.frames.iter().position(|f| dead.contains(&f.exp))
        };
        if let Some(j) = from {
            while self.frames.len() > j {
                self.pop_frame();
            }
        }
        for list in [&mut self.s_current, &mut self.s_next] {
            let entries = std::mem::take(list);
            for entry in entries {
                if dead.contains(&entry.exp) {
                    self.arena.release(entry.node);
                } else {
                    list.push(entry);
                }
            }
        }
    }

    /// Hands the current subtree's untried alternatives to the pool
    /// (after the budget's cut, which may still move later: the pool
    /// parks them).
    pub(super) fn park_frames(&mut self, pool: &SubtreePool) {
        let mut given = Vec::new();
        for i in 0..self.frames.len() {
            let next = self.frames[i].next;
            if next < self.frames[i].alts.len() {
                given.extend(self.donate_alternatives(i, next));
            }
        }
        while !self.frames.is_empty() {
            self.pop_frame();
        }
        pool.give(given);
    }
}
