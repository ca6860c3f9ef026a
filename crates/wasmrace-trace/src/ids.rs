//! Stable identities: threads are named by their spawn path (Concuerror's
//! scheme: `main`, `main.1`, `main.1.2`) and objects by creator + creation
//! index, so that an id means the same thing in every interleaving and a
//! schedule file keeps its meaning.

use std::fmt;

/// SplitMix64 finaliser: a fast, deterministic 64-bit mixer used to derive
/// stable ids. Not cryptographic; collisions are as unlikely as for any
/// 64-bit hash, which is ample for the few thousand ids of one test.
pub const fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A stable thread id: the hash of the thread's spawn path. The same logical
/// thread gets the same `Tid` in every execution of the same test, whatever
/// the interleaving; guests see it as the value inside `wasmrace::ThreadId`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Tid(pub u64);

impl fmt::Debug for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tid({:#018x})", self.0)
    }
}

/// Where a thread sits in the spawn tree: the main thread is the empty path,
/// its second child `[2]`, that child's first child `[2, 1]`. Spawn indices
/// count from 1 per parent, in the parent's program order.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct ThreadPath(pub Vec<u32>);

const TID_SEED: u64 = 0x7761_736d_7261_6365; // "wasmrace"

impl ThreadPath {
    /// The main thread's path (empty; displayed `main`).
    pub fn main() -> Self {
        ThreadPath(Vec::new())
    }

    /// The path of this thread's `index`-th child (1-based).
    pub fn child(&self, index: u32) -> Self {
        let mut p = self.0.clone();
        p.push(index);
        ThreadPath(p)
    }

    /// The thread's stable id: a hash of the path, the same in every
    /// interleaving.
    pub fn tid(&self) -> Tid {
        self.0.iter().fold(Tid::MAIN, |t, &i| t.child(i))
    }

    /// Parses the display form (`main`, `main.1.2`) or the compact one
    /// (`main.1*3.2` for `main.1.1.1.2`, see [`ThreadPath::compact`]).
    /// Paths deeper than [`ThreadPath::MAX_PARSED_DEPTH`] are refused.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split('.');
        if parts.next()? != "main" {
            return None;
        }
        let mut v = Vec::new();
        for p in parts {
            let (n, times) = match p.split_once('*') {
                Some((n, t)) => (n, t.parse::<usize>().ok().filter(|&t| t >= 1)?),
                None => (p, 1),
            };
            let n: u32 = n.parse().ok()?;
            if n == 0 || v.len() + times > Self::MAX_PARSED_DEPTH {
                return None;
            }
            v.extend(std::iter::repeat_n(n, times));
        }
        Some(ThreadPath(v))
    }

    /// The deepest path `parse` accepts: a schedule file cannot make the
    /// host allocate more than this per name.
    pub const MAX_PARSED_DEPTH: usize = 1 << 20;

    /// The compact display form: a run of four or more equal indices is
    /// written once with its length (`main.1*8000` for a chain of 8,000
    /// spawns), so that a deep chain's name stays short in reports and
    /// schedule files. Paths without such runs display as with `Display`;
    /// `parse` reads both forms.
    pub fn compact(&self) -> String {
        let mut s = String::from("main");
        let mut k = 0;
        while k < self.0.len() {
            let n = self.0[k];
            let run = self.0[k..].iter().take_while(|&&m| m == n).count();
            if run >= 4 {
                s.push_str(&format!(".{n}*{run}"));
            } else {
                for _ in 0..run {
                    s.push_str(&format!(".{n}"));
                }
            }
            k += run;
        }
        s
    }
}

impl Tid {
    /// The main thread's id (`ThreadPath::main().tid()`).
    pub const MAIN: Tid = Tid(TID_SEED);

    /// The id of this thread's `index`-th child (1-based): the same as
    /// `path.child(index).tid()` for this thread's `path`, computed in
    /// constant space.
    pub const fn child(self, index: u32) -> Tid {
        Tid(mix64(self.0 ^ mix64(index as u64 + 1)))
    }
}

impl fmt::Display for ThreadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("main")?;
        for i in &self.0 {
            write!(f, ".{i}")?;
        }
        Ok(())
    }
}

/// A stable id of something threads can conflict on: a host object, one key
/// of a table, a mailbox, a registry name, a thread's liveness. Two accesses
/// conflict when they name the same `Oid` and one is not a read.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Oid(pub u64);

impl fmt::Debug for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Oid({:#018x})", self.0)
    }
}

/// Domain tags keep ids of different kinds of things apart.
pub mod tag {
    pub const OBJECT: u64 = 1;
    pub const TABLE_KEY: u64 = 2;
    pub const MAILBOX: u64 = 3;
    pub const LIVENESS: u64 = 4;
    pub const NAME: u64 = 5;
    pub const MEMORY: u64 = 6;
    pub const PROCESS: u64 = 7;
}

impl Oid {
    /// The id of the `index`-th object (0-based) created by thread `creator`.
    pub fn object(creator: Tid, index: u32) -> Oid {
        Oid::derive(tag::OBJECT, creator.0, u64::from(index))
    }
    /// The id of one key of a table: table operations conflict per key.
    pub fn table_key(table: Oid, key: u64) -> Oid {
        Oid::derive(tag::TABLE_KEY, table.0, key)
    }
    /// The id of thread `t`'s mailbox.
    pub fn mailbox(t: Tid) -> Oid {
        Oid::derive(tag::MAILBOX, t.0, 0)
    }
    /// The id of thread `t` being alive: exit writes it, join and register
    /// read or sync on it.
    pub fn liveness(t: Tid) -> Oid {
        Oid::derive(tag::LIVENESS, t.0, 0)
    }
    /// The id of a registry name.
    pub fn name(name: &[u8]) -> Oid {
        let mut h = tag::NAME;
        for chunk in name.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            h = mix64(h ^ u64::from_le_bytes(b));
        }
        Oid::derive(tag::NAME, h, name.len() as u64)
    }
    /// The id of the 8-byte granule of linear memory at `granule` (an
    /// address with its low three bits clear): a std guest's atomics and
    /// waits on overlapping bytes conflict through it.
    pub fn memory(granule: u64) -> Oid {
        Oid::derive(tag::MEMORY, granule, 0)
    }
    /// The id of the wait queue of `memory.atomic.wait` at address
    /// `addr`: waits, wake-ups and notifies there conflict through it.
    pub fn wait_queue(addr: u64) -> Oid {
        Oid::derive(tag::MEMORY, addr, 1)
    }
    /// The id of the process being alive: every step of a std guest reads
    /// it, and the end of the process (which stops every thread) writes it.
    pub fn process() -> Oid {
        Oid::derive(tag::PROCESS, 0, 0)
    }
    /// An id in domain `tag` (see the `tag` constants) from two values.
    pub fn derive(tag: u64, a: u64, b: u64) -> Oid {
        Oid(mix64(mix64(tag ^ mix64(a)) ^ b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_and_hash_apart() {
        let p = ThreadPath::main().child(1).child(2);
        assert_eq!(p.to_string(), "main.1.2");
        assert_eq!(ThreadPath::parse("main.1.2"), Some(p.clone()));
        assert_eq!(ThreadPath::parse("main"), Some(ThreadPath::main()));
        assert_eq!(ThreadPath::parse("main.0"), None);
        assert_eq!(ThreadPath::parse("mian.1"), None);
        assert_ne!(p.tid(), ThreadPath::main().child(2).child(1).tid());
        assert_ne!(ThreadPath::main().tid(), ThreadPath::main().child(1).tid());
        assert_eq!(Tid::MAIN.child(1).child(2), p.tid());
    }

    #[test]
    fn compact_names_fold_runs_and_parse_back() {
        let deep = ThreadPath(vec![1; 8000]);
        assert_eq!(deep.compact(), "main.1*8000");
        assert_eq!(ThreadPath::parse("main.1*8000"), Some(deep));
        let p = ThreadPath(vec![2, 1, 1, 1, 1, 3, 3, 3]);
        assert_eq!(p.compact(), "main.2.1*4.3.3.3");
        assert_eq!(ThreadPath::parse(&p.compact()), Some(p.clone()));
        assert_eq!(ThreadPath::parse(&p.to_string()), Some(p));
        assert_eq!(ThreadPath::main().compact(), "main");
        assert_eq!(ThreadPath::parse("main.1*0"), None);
        assert_eq!(ThreadPath::parse("main.0*3"), None);
        assert_eq!(ThreadPath::parse("main.1*99999999999"), None);
    }

    #[test]
    fn ids_of_different_kinds_differ() {
        let t = ThreadPath::main().tid();
        assert_ne!(Oid::mailbox(t), Oid::liveness(t));
        assert_ne!(Oid::object(t, 0), Oid::object(t, 1));
        assert_ne!(Oid::name(b"ab"), Oid::name(b"ab\0"));
        assert_eq!(Oid::name(b"pong"), Oid::name(b"pong"));
    }
}
