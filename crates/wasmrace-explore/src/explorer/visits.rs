//! The state cache the workers of one `dfs --state-cache` run share
//! (`check --jobs N`), kept so that they explore exactly what one thread
//! explores, whatever the timing.
//!
//! **One thread.** Its DFS visits the nodes of the search tree in preorder,
//! which is the order of their order keys (`key_of` in `dfs/mod.rs`), and
//! expands a node (explores below it) exactly when no node visited before
//! reached the same state (cache key). So for every state it expands the
//! visit with the least key among its visits, and its visits are the
//! children of its expansions.
//!
//! **Several workers.** A visit looks its state up here: it is pruned when
//! the entry holds a smaller key; otherwise it takes the entry, with an id
//! ([`ExpId`]), and is expanded. A worker may expand a state before another
//! visits the same state at a smaller key: that later visit takes the entry
//! and *kills* the earlier expansion, where one thread would have pruned.
//! At the end the entries hold exactly one thread's expansions. Why, by
//! induction on keys: the subtree below a state depends on the state alone
//! (the cache key is built so), and extending two keys neither of which is
//! a prefix of the other by the same steps keeps their order; so whatever a
//! killed expansion reaches, the visit that killed it reaches too, at a
//! smaller key. Hence every visit made here has a one-thread visit of its
//! state at most as large, the least key held for a state is one thread's,
//! a one-thread expansion is never pruned nor killed here, and a visit
//! below a killed expansion is killed or pruned in its turn. (A visit whose
//! smaller twin is its own ancestor is pruned at once: the ancestor took
//! the entry before.) So one thread runs an execution logged here as it ran
//! when every expansion on its path is alive; stops it, pruned, at the
//! first killed expansion it made when that one hangs from a live one
//! (one thread visits the state there, seen before); and runs nothing of
//! it below a killed expansion made by an earlier execution
//! ([`Logged::fate`]). A bug found below a killed expansion is not trusted:
//! one that depends on the state alone is found again at a smaller key,
//! but a livelock closes a cycle on its own path, which may pass above
//! the killed expansion, and the step limit counts the path's length; so
//! the pool parks the work after a published bug until it knows whether
//! one thread meets it (`steal/`).
//!
//! **What the key must hold.** All of this rests on the subtree below a
//! state depending on its cache key alone. Fair scheduling narrows the
//! enabled threads by the path (how often each thread yielded, who ran
//! since), so the explorer folds the fairness state into the key
//! (`Fairness::key`); the preemption bound's part is in dfs's key. The
//! step limit (`--max-steps`) is the one thing left: it shapes a subtree
//! only by cutting an execution, which then fails. So a run in which no
//! execution reaches the step limit is exact, for one thread and for
//! threads alike; in a run where one does, one thread reports that
//! failure, threads may report another, and no argument says more.
//!
//! Executions are logged ([`Logged`]) so that the pool can count them as
//! one thread has them (`steal/ledger.rs`).
//!
//! **Bounded memory.** An entry holds the first 16 bytes of the state's
//! cache key (128 bits: among a billion states, a collision has odds
//! below 10^-20), the
//! expansion's id and its order key, stored in a few bytes ([`encode`]:
//! keys are mostly runs of first alternatives). Entries and logs are
//! charged against `--cache-mb`; a state takes about 2 to 3 times the room
//! it takes in one thread's cache. Unlike that cache, this one cannot evict
//! (which state a full cache would drop depends on timing), so a run that
//! fills it stops there and says so ([`Visit::Full`]).

use std::cmp::Ordering as KeyOrder;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// An expansion's id: the worker's slot in the top bits, its own count
/// below, so that the expansions of one execution have consecutive ids.
/// 0 is no expansion (the root of the search).
pub type ExpId = u64;

/// The id of no expansion: an execution above every expansion.
pub const NO_EXPANSION: ExpId = 0;

/// Bits of an [`ExpId`] below the worker's slot.
const SLOT_SHIFT: u32 = 40;

/// Shards of the map, so that workers rarely wait for one another.
const SHARDS: usize = 64;

/// Bytes charged for an entry besides its key's: the state hash, where
/// its key is, the id, and the table's own overhead.
const ENTRY_BYTES: u64 = 48;

/// Bytes charged for a killed expansion's id, kept in `dead`.
const KILL_BYTES: u64 = 16;

/// Bytes charged per logged execution.
const LOG_BYTES: u64 = std::mem::size_of::<Logged>() as u64;

/// An execution as the pool counts it: the deepest expansion on its path
/// before it made any (`parent`), the expansions it made (`created`
/// consecutive ids from `first`, each below the one before), the deepest
/// expansion on its path at its end (`leaf`), and what happened in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Logged {
    /// The deepest expansion on the execution's path at its end.
    pub leaf: ExpId,
    /// The deepest expansion on its path before its first own.
    pub parent: ExpId,
    /// The first expansion the execution made.
    pub first: ExpId,
    /// How many it made.
    pub created: u32,
    /// The index (from 0) among them of the first at which the strategy's
    /// own bound pruned alternatives, `u32::MAX` if none.
    pub pruned_at: u32,
    /// [`Logged::CACHE_HIT`].
    pub flags: u32,
}

impl Logged {
    /// The execution ended at a state explored from elsewhere.
    pub const CACHE_HIT: u32 = 1;

    /// A fresh entry: nothing made, nothing pruned.
    pub fn new() -> Self {
        Logged {
            pruned_at: u32::MAX,
            ..Logged::default()
        }
    }

    /// What one run makes of this execution, given which expansions are
    /// alive.
    pub fn fate(&self, alive: impl Fn(ExpId) -> bool) -> Fate {
        let parent = if self.created == 0 {
            self.leaf
        } else {
            self.parent
        };
        if !alive(parent) {
            return Fate::Elsewhere;
        }
        match (0..self.created).find(|k| !alive(self.first + u64::from(*k))) {
            Some(k) => Fate::PrunedAt(k),
            None => Fate::Same,
        }
    }
}

/// What one run makes of a logged execution ([`Logged::fate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It runs it too.
    Same,
    /// It stops it at its `k`-th own expansion, which another visit of the
    /// same state killed: one run visits that state there, and prunes.
    PrunedAt(u32),
    /// Nothing of it: it lies below an expansion that was killed.
    Elsewhere,
}

/// What a visit does (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// Explore below it: it holds the state now, as this expansion.
    Expand(ExpId),
    /// A smaller key holds the state: prune.
    Prune,
    /// The cache is full: the run stops.
    Full,
}

/// A state's least key so far (at `off..off + len` of its shard's bytes)
/// and the expansion that holds it.
#[derive(Debug)]
struct Held {
    off: u32,
    len: u32,
    id: ExpId,
}

/// One shard: its entries and the bytes of their keys (a key replaced by
/// a smaller one leaves its bytes behind, charged).
#[derive(Debug, Default)]
struct Shard {
    held: HashMap<[u8; 16], Held>,
    keys: Vec<u8>,
}

impl Shard {
    /// Stores `key`'s bytes; `None` past 4 GiB of keys in one shard.
    fn store(&mut self, key: &[u32]) -> Option<(u32, u32)> {
        let off = u32::try_from(self.keys.len()).ok()?;
        encode(key, &mut self.keys);
        let len = u32::try_from(self.keys.len()).ok()? - off;
        Some((off, len))
    }

    fn key(&self, held: &Held) -> &[u8] {
        &self.keys[held.off as usize..(held.off + held.len) as usize]
    }
}

/// Literal elements below this take one byte.
const ESCAPE: u8 = 0x7F;
/// A byte with this bit is a run of its low bits' number of 1s.
const RUN: u8 = 0x80;

/// Appends `key` in a few bytes: each run of up to 127 1s (first
/// alternatives) in one byte, other elements below 127 in one, the rest
/// in five.
pub fn encode(key: &[u32], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < key.len() {
        let run = key[i..].iter().take(127).take_while(|e| **e == 1).count();
        if run > 0 {
            out.push(RUN | run as u8);
            i += run;
            continue;
        }
        match u8::try_from(key[i]) {
            Ok(small) if small < ESCAPE => out.push(small),
            _ => {
                out.push(ESCAPE);
                out.extend_from_slice(&key[i].to_le_bytes());
            }
        }
        i += 1;
    }
}

/// The elements of a key [`encode`] stored.
pub fn decode(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *bytes.get(i)?;
        i += 1;
        Some(if b & RUN != 0 {
            vec![1; usize::from(b & !RUN)]
        } else if b == ESCAPE {
            let word = bytes.get(i..i + 4)?;
            i += 4;
            vec![u32::from_le_bytes(word.try_into().ok()?)]
        } else {
            vec![u32::from(b)]
        })
    })
    .flatten()
}

/// The shared state cache; see the module documentation.
#[derive(Debug)]
pub struct SharedVisits {
    shards: Vec<Mutex<Shard>>,
    dead: Mutex<HashSet<ExpId>>,
    kills: AtomicU64,
    bytes: AtomicU64,
    cap_bytes: u64,
    cache_mb: u64,
    slots: AtomicU64,
}

impl SharedVisits {
    /// A cache of at most `cache_mb` MiB.
    pub fn new(cache_mb: u64) -> Self {
        Self::with_cap_bytes(cache_mb, cache_mb.saturating_mul(1 << 20))
    }

    /// A cache of at most `bytes` bytes, reported as `cache_mb` (tests
    /// fill a small one).
    pub fn with_cap_bytes(cache_mb: u64, bytes: u64) -> Self {
        SharedVisits {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            dead: Mutex::default(),
            kills: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            cap_bytes: bytes,
            cache_mb,
            slots: AtomicU64::new(0),
        }
    }

    /// The `--cache-mb` it was made with.
    pub fn cache_mb(&self) -> u64 {
        self.cache_mb
    }

    /// A slot for a new worker: its ids are `slot << 40 | n`.
    pub fn slot(&self) -> u64 {
        self.slots.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The id of the `n`-th expansion (from 0) of the worker in `slot`.
    pub fn id(slot: u64, n: u64) -> ExpId {
        (slot << SLOT_SHIFT) | n
    }

    /// The visit of a node whose order key is `key` at the state whose
    /// cache key is `state`, to be expansion `id` if it expands.
    pub fn visit(&self, state: [u8; 32], key: &[u32], id: ExpId) -> Visit {
        let word = u64::from_le_bytes(state[..8].try_into().unwrap_or([0; 8]));
        let short: [u8; 16] = state[..16].try_into().unwrap_or([0; 16]);
        let mut shard = lock(&self.shards[(word % SHARDS as u64) as usize]);
        let shard = &mut *shard;
        if let Some(held) = shard.held.get(&short) {
            let order = decode(shard.key(held)).cmp(key.iter().copied());
            if order != KeyOrder::Greater {
                return Visit::Prune;
            }
        }
        let before = shard.keys.len() as u64;
        let stored = shard.store(key);
        let cost = shard.keys.len() as u64 - before;
        let fresh = !shard.held.contains_key(&short);
        let room = self.charge(cost + if fresh { ENTRY_BYTES } else { KILL_BYTES });
        let Some((off, len)) = stored.filter(|_| room) else {
            shard.keys.truncate(before as usize);
            return Visit::Full;
        };
        let held = Held { off, len, id };
        if let Some(old) = shard.held.insert(short, held) {
            lock(&self.dead).insert(old.id);
            self.kills.fetch_add(1, Ordering::Release);
        }
        Visit::Expand(id)
    }

    /// Charges a logged execution; false when the cache is full.
    pub fn charge_log(&self) -> bool {
        self.charge(LOG_BYTES)
    }

    fn charge(&self, bytes: u64) -> bool {
        let before = self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > self.cap_bytes {
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Expansions killed so far (a worker rechecks its path when this
    /// moves).
    pub fn kills(&self) -> u64 {
        self.kills.load(Ordering::Acquire)
    }

    /// The killed expansions.
    pub fn dead(&self) -> MutexGuard<'_, HashSet<ExpId>> {
        lock(&self.dead)
    }

    /// States held: one thread's "states explored", once the run is over.
    pub fn states(&self) -> u64 {
        self.shards.iter().map(|s| lock(s).held.len() as u64).sum()
    }
}

/// Locks `m`, poisoned or not: every update of the pool's and the cache's
/// shared data is whole before its lock is let go, and a worker that
/// panicked ends the run anyway.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(b: u8) -> [u8; 32] {
        [b; 32]
    }

    /// The least key holds a state; a smaller one arriving later kills the
    /// expansion that held it; a larger or equal one is pruned.
    #[test]
    fn the_least_key_holds_a_state_and_kills_a_larger_holder() {
        let v = SharedVisits::new(1);
        let (a, b) = (SharedVisits::id(1, 0), SharedVisits::id(2, 0));
        assert_eq!(v.visit(state(1), &[0, 3, 1], a), Visit::Expand(a));
        assert_eq!(v.visit(state(1), &[0, 3, 2], b), Visit::Prune);
        assert_eq!(v.kills(), 0);
        assert_eq!(v.visit(state(1), &[0, 2, 5, 7], b), Visit::Expand(b));
        assert_eq!(v.kills(), 1);
        assert!(v.dead().contains(&a));
        assert!(!v.dead().contains(&b));
        // The ancestor of a key is smaller: a cycle is pruned.
        assert_eq!(v.visit(state(1), &[0, 2, 5, 7, 1], a + 1), Visit::Prune);
        assert_eq!(v.states(), 1);
    }

    /// A full cache says so instead of evicting.
    #[test]
    fn a_full_cache_refuses_new_states() {
        // Two entries with keys of 2 bytes each, and 16 bytes more.
        let v = SharedVisits::with_cap_bytes(1, 2 * (ENTRY_BYTES + 2) + 16);
        assert!(matches!(v.visit(state(1), &[0, 1], 1), Visit::Expand(_)));
        assert!(matches!(v.visit(state(2), &[0, 2], 2), Visit::Expand(_)));
        assert_eq!(v.visit(state(3), &[0, 3], 3), Visit::Full);
        // Known states are still answered.
        assert_eq!(v.visit(state(2), &[0, 4], 4), Visit::Prune);
        // 16 bytes are left: less than a logged execution.
        assert!(!v.charge_log());
    }

    /// Keys come back as they went in, and compare as they did.
    #[test]
    fn keys_are_stored_in_few_bytes_and_compare_as_keys() {
        let keys: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![0, 1],
            vec![0, 1, 1],
            vec![0, 1, 2],
            vec![0, 2],
            vec![0, 126, 1],
            vec![0, 127],
            vec![0, 300, 0, 1],
            vec![1; 300],
            [vec![1; 127], vec![2]].concat(),
            [vec![1; 128], vec![0]].concat(),
            vec![u32::MAX, 1, 5],
        ];
        for a in &keys {
            let mut bytes = Vec::new();
            encode(a, &mut bytes);
            assert_eq!(decode(&bytes).collect::<Vec<_>>(), *a);
            for b in &keys {
                assert_eq!(
                    decode(&bytes).cmp(b.iter().copied()),
                    a.cmp(b),
                    "{a:?} {b:?}"
                );
            }
        }
        let mut typical = Vec::new();
        encode(
            &[[0].as_slice(), &[1; 20], &[2], &[1; 30], &[3]].concat(),
            &mut typical,
        );
        assert_eq!(typical.len(), 5, "a depth of 53 in 5 bytes");
    }
}
