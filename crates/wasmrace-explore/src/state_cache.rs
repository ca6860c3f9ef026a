//! The cache of visited program states that SES (FSE 2015, §3) and DFS
//! with `state_cache` prune with: a set of 256-bit state hashes under a
//! memory cap.
//!
//! **Layout.** An open-addressing table of 32-byte slots (the hash itself; an
//! all-zero slot is empty) in buckets of [`BUCKET`] slots; a hash lives in
//! the bucket its first 8 bytes select. The table starts small and doubles
//! (rehashing) when it is three-quarters full or a bucket overflows, up to
//! the cap: `cache_mb` MiB of slots, rounded down to a power of two. No
//! std `HashMap`: membership and replacement depend only on the hashes, so a
//! run is deterministic.
//!
//! **Replacement when full.** At the cap, a new state whose bucket is full
//! replaces one of the bucket's entries, chosen by bytes 8..16 of the new
//! hash (pseudo-random and reproducible). The evicted state may be explored
//! again later: that costs time, never soundness, because the cache only
//! prunes (the paper: "neither the termination nor the safety argument for
//! our algorithm depends on cache"). `cache_mb = 0` turns the cache off:
//! every state is new.

/// The counter of states a cache took as new ([`Stat`](crate::Stat) name,
/// the same for every strategy that caches states).
pub const STATES_EXPLORED: &str = "states explored";
/// The counter of visits a cache pruned.
pub const CACHE_HITS: &str = "cache hits";
/// The counter of states dropped at the cache's cap.
pub const CACHE_EVICTIONS: &str = "cache evictions";

/// Slots per bucket.
pub const BUCKET: usize = 8;
const SLOT_BYTES: u64 = 32;
/// Slots allocated at first use (32 KiB), unless the cap is smaller.
const INITIAL_SLOTS: usize = 1024;

/// A capped set of state hashes; see the module documentation.
#[derive(Clone, Debug)]
pub struct StateCache {
    slots: Vec<[u8; 32]>,
    /// The all-zero hash cannot live in a slot (it marks empty ones).
    has_zero: bool,
    cap_slots: usize,
    len: usize,
    hits: u64,
    evictions: u64,
}

fn word(h: &[u8; 32], i: usize) -> u64 {
    u64::from_le_bytes(h[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
}

impl StateCache {
    /// A cache holding at most `cache_mb` MiB of hashes (32 bytes each).
    pub fn new(cache_mb: u64) -> Self {
        let max = cache_mb.saturating_mul(1 << 20) / SLOT_BYTES;
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        // A power of two number of whole buckets, or nothing.
        let cap_slots = if max < BUCKET {
            0
        } else {
            1usize << (usize::BITS - 1 - max.leading_zeros())
        };
        StateCache {
            slots: Vec::new(),
            has_zero: false,
            cap_slots,
            len: 0,
            hits: 0,
            evictions: 0,
        }
    }

    /// An empty cache with the same cap.
    pub fn emptied(&self) -> Self {
        StateCache {
            slots: Vec::new(),
            has_zero: false,
            cap_slots: self.cap_slots,
            len: 0,
            hits: 0,
            evictions: 0,
        }
    }

    /// A cache of `slots` hashes at most (rounded down to a power of two
    /// of at least one bucket): tests fill a small one.
    #[cfg(test)]
    pub(crate) fn with_slots(slots: usize) -> Self {
        let cap_slots = 1usize << (usize::BITS - 1 - slots.max(BUCKET).leading_zeros());
        StateCache {
            cap_slots,
            ..StateCache::new(0)
        }
    }

    /// Whether the cache can hold anything (`cache_mb > 0`).
    pub fn enabled(&self) -> bool {
        self.cap_slots > 0
    }

    /// States held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no state is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `insert` calls that found the state already there.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// States dropped to make room once the cap was reached.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Bytes of slots allocated now.
    pub fn bytes(&self) -> u64 {
        self.slots.len() as u64 * SLOT_BYTES
    }

    /// The most slots the cap allows.
    pub fn capacity(&self) -> usize {
        self.cap_slots
    }

    /// Whether the state hashed to `h` is held (no hit is counted).
    pub fn contains(&self, h: &[u8; 32]) -> bool {
        if *h == [0; 32] {
            return self.has_zero;
        }
        if self.slots.is_empty() {
            return false;
        }
        let b = self.bucket(h);
        self.slots[b..b + BUCKET].contains(h)
    }

    /// Adds `h`; returns whether it was new (`false` is a cache hit). With
    /// the cache off, every state is new and nothing is kept.
    pub fn insert(&mut self, h: [u8; 32]) -> bool {
        if !self.enabled() {
            return true;
        }
        if h == [0; 32] {
            if self.has_zero {
                self.hits += 1;
                return false;
            }
            self.has_zero = true;
            self.len += 1;
            return true;
        }
        if self.slots.is_empty() {
            self.slots = vec![[0; 32]; INITIAL_SLOTS.min(self.cap_slots)];
        }
        loop {
            let b = self.bucket(&h);
            let can_grow = self.slots.len() < self.cap_slots;
            let crowded = (self.len + 1) * 4 > self.slots.len() * 3;
            let bucket = &mut self.slots[b..b + BUCKET];
            if bucket.contains(&h) {
                self.hits += 1;
                return false;
            }
            match bucket.iter().position(|s| *s == [0; 32]) {
                Some(i) if !(crowded && can_grow) => {
                    bucket[i] = h;
                    self.len += 1;
                    return true;
                }
                _ if can_grow => self.grow(),
                _ => {
                    // Full at the cap: replace one entry of the bucket.
                    let i = (word(&h, 1) % BUCKET as u64) as usize;
                    match bucket.iter().position(|s| *s == [0; 32]) {
                        Some(free) => {
                            bucket[free] = h;
                            self.len += 1;
                        }
                        None => {
                            bucket[i] = h;
                            self.evictions += 1;
                        }
                    }
                    return true;
                }
            }
        }
    }

    fn bucket(&self, h: &[u8; 32]) -> usize {
        let buckets = (self.slots.len() / BUCKET) as u64;
        ((word(h, 0) & (buckets - 1)) as usize) * BUCKET
    }

    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.slots, vec![[0; 32]; 0]);
        self.slots = vec![[0; 32]; (old.len() * 2).min(self.cap_slots)];
        for h in old.into_iter().filter(|s| *s != [0; 32]) {
            let b = self.bucket(&h);
            // Doubling splits each bucket in two: the entries still fit.
            if let Some(i) = self.slots[b..b + BUCKET].iter().position(|s| *s == [0; 32]) {
                self.slots[b + i] = h;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u64) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (k, lane) in out.chunks_mut(8).enumerate() {
            let v = wasmrace_trace::mix64(i.wrapping_mul(4).wrapping_add(k as u64 + 1));
            lane.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    #[test]
    fn inserts_hits_and_grows_without_losing_states() {
        let mut c = StateCache::new(1);
        assert_eq!(c.capacity(), 32768);
        for i in 0..5000 {
            assert!(c.insert(h(i)), "state {i} is new");
        }
        assert_eq!(c.len(), 5000);
        assert_eq!(c.evictions(), 0, "below the cap nothing is evicted");
        for i in 0..5000 {
            assert!(c.contains(&h(i)));
            assert!(!c.insert(h(i)));
        }
        assert_eq!(c.hits(), 5000);
        assert!(!c.contains(&h(5000)));
        assert!(c.bytes() <= 1 << 20);
        // The all-zero hash is a state like any other.
        assert!(c.insert([0; 32]));
        assert!(!c.insert([0; 32]));
        assert!(c.contains(&[0; 32]));
    }

    #[test]
    fn at_the_cap_new_states_replace_old_ones() {
        // 1 MiB = 32768 slots; insert twice as many states.
        let mut c = StateCache::new(1);
        for i in 0..65536 {
            assert!(c.insert(h(i)));
        }
        assert_eq!(c.bytes(), 1 << 20, "never above the cap");
        assert!(c.evictions() > 0);
        assert_eq!(c.len() as u64 + c.evictions(), 65536);
        // The latest state is always there; some early ones are gone.
        assert!(c.contains(&h(65535)));
        let kept = (0..1000).filter(|i| c.contains(&h(*i))).count();
        assert!(kept < 1000, "{kept}");
        // Same inserts, same table: deterministic.
        let mut d = StateCache::new(1);
        for i in 0..65536 {
            d.insert(h(i));
        }
        assert!((0..65536).all(|i| c.contains(&h(i)) == d.contains(&h(i))));
    }

    #[test]
    fn zero_megabytes_turns_the_cache_off() {
        let mut c = StateCache::new(0);
        assert!(!c.enabled());
        assert!(c.insert(h(1)));
        assert!(c.insert(h(1)), "nothing is remembered");
        assert_eq!((c.len(), c.hits(), c.bytes()), (0, 0, 0));
    }
}
