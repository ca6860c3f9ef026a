//! Blocks of executions that depend on one another: the unit a run split
//! by execution deals out (`--jobs`, `--partition`), so that the executions
//! one of them needs run on one worker, in order.
//!
//! Most strategies that split by execution draw execution `i` from the
//! seed and `i` alone: every execution is its own block. Stratified
//! sampling (SS) builds a sample with `d` delays from `d + 1` executions,
//! each placing its delay on the one before it: a sample is a block, and
//! since its size is fixed by the round it belongs to, the global index of
//! every execution is still known before anything runs, which is what
//! lets the workers number the bug and cut the budget exactly as one
//! thread does.
//!
//! RaceFuzzer's directed executions each depend on the seed, their index
//! and the racing pairs its first executions (the detection phase)
//! predicted: those first executions are a *prologue* every worker runs,
//! counted only by the one whose share their index is in (as the
//! partitions of a split by prefix each walk the tree above the split
//! depth). It costs a few executions per worker and keeps every index's
//! execution the single run's.
//!
//! PULSE procrastination runs a random execution, then procrastinated
//! versions of it, as many as its conflicts allow: a *family*, whose size
//! only running it tells ([`Blocks::Open`]). There `begin` is given a
//! position, `block << OPEN_SHIFT | offset`, in every run (one thread
//! too), the strategy says when a block ended, and a run split between
//! threads learns the sizes as the blocks end ([`OpenSizes`]): positions
//! are in the order of the global indices, so the lowest failing position
//! is the single run's bug, and the sizes of the blocks below a position
//! give its global index, its number and the budget's cut.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// How a strategy's executions group into blocks
/// ([`Profile::blocks`](crate::Profile::blocks)), numbered from
/// 0 in execution order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Blocks {
    /// Every execution is its own block.
    #[default]
    Single,
    /// Rounds `d = 0, 1, ...` of `c1 · c2^d` blocks (saturating) of `d + 1`
    /// executions each: SS's samples with `d` delays.
    Rounds {
        /// Blocks in round 0, at least 1.
        c1: u64,
        /// Growth of the number of blocks per round, at least 1.
        c2: u64,
    },
    /// Every execution is its own block, and the first `n` are run by
    /// every share (each counted by the share that owns its block).
    Prologue(u64),
    /// Blocks whose sizes only running them tells: the index `begin` gets
    /// is a position (`block << OPEN_SHIFT | offset`), and the strategy
    /// says when a block ended
    /// ([`Standing::block_goes_on`](crate::Standing::block_goes_on)).
    /// A block has fewer than `1 << OPEN_SHIFT` executions.
    Open,
}

/// Bits of a position ([`Blocks::Open`]) that hold the offset in its block.
pub const OPEN_SHIFT: u32 = 24;

/// The position of block `block`'s execution `offset` ([`Blocks::Open`]).
pub fn open_position(block: u64, offset: u64) -> u64 {
    block.checked_shl(OPEN_SHIFT).unwrap_or(u64::MAX) | (offset & ((1 << OPEN_SHIFT) - 1))
}

/// Where an execution index lies: its block, the block's first index and
/// its length, and the round it belongs to (0 for `Single`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The block's number.
    pub block: u64,
    /// The global index of the block's first execution.
    pub start: u64,
    /// Executions in the block.
    pub len: u64,
    /// The round (SS's delay bound); 0 for single executions.
    pub round: u32,
    /// The block's place within its round.
    pub in_round: u64,
}

impl Place {
    /// The index's place within its block, `0..len`.
    pub fn offset(&self, index: u64) -> u64 {
        index - self.start
    }

    /// Whether `index` is the block's last execution.
    pub fn is_last(&self, index: u64) -> bool {
        index + 1 == self.start.saturating_add(self.len)
    }
}

impl Blocks {
    /// The place of execution `index`.
    pub fn locate(self, index: u64) -> Place {
        match self {
            Blocks::Single | Blocks::Prologue(_) => Place {
                block: index,
                start: index,
                len: 1,
                round: 0,
                in_round: index,
            },
            Blocks::Open => {
                let block = index >> OPEN_SHIFT;
                Place {
                    block,
                    start: block << OPEN_SHIFT,
                    len: 1 << OPEN_SHIFT,
                    round: 0,
                    in_round: block,
                }
            }
            Blocks::Rounds { .. } => {
                let (mut block, mut start) = (0u64, 0u64);
                let mut round = 0u32;
                loop {
                    let (count, len) = self.round(round);
                    let size = count.saturating_mul(len);
                    if index - start < size || size == u64::MAX {
                        let in_round = (index - start) / len;
                        return Place {
                            block: block.saturating_add(in_round),
                            start: start + in_round * len,
                            len,
                            round,
                            in_round,
                        };
                    }
                    block = block.saturating_add(count);
                    start += size;
                    round += 1;
                }
            }
        }
    }

    /// The global index of block `block`'s first execution (saturating).
    pub fn start(self, block: u64) -> u64 {
        match self {
            Blocks::Single | Blocks::Prologue(_) => block,
            Blocks::Open => block.checked_shl(OPEN_SHIFT).unwrap_or(u64::MAX),
            Blocks::Rounds { .. } => {
                let (mut first, mut start) = (0u64, 0u64);
                let mut round = 0u32;
                loop {
                    let (count, len) = self.round(round);
                    if block - first < count || count == u64::MAX {
                        return start.saturating_add((block - first).saturating_mul(len));
                    }
                    first += count;
                    start = start.saturating_add(count.saturating_mul(len));
                    if start == u64::MAX {
                        return u64::MAX;
                    }
                    round += 1;
                }
            }
        }
    }

    /// The executions every share runs before its own.
    pub fn prologue(self) -> u64 {
        match self {
            Blocks::Prologue(n) => n,
            Blocks::Single | Blocks::Rounds { .. } | Blocks::Open => 0,
        }
    }

    /// Round `round`'s number of blocks and their length.
    fn round(self, round: u32) -> (u64, u64) {
        match self {
            Blocks::Single | Blocks::Prologue(_) | Blocks::Open => (u64::MAX, 1),
            Blocks::Rounds { c1, c2 } => (
                c1.max(1).saturating_mul(c2.max(1).saturating_pow(round)),
                u64::from(round) + 1,
            ),
        }
    }
}

/// The sizes of the [`Blocks::Open`] blocks of a run split between
/// threads, learnt as the blocks end: what turns a position into a global
/// index, in which the budget and the bug's number are counted. Shared by
/// the workers (`Config::open_sizes`).
#[derive(Clone, Debug)]
pub struct OpenSizes(Arc<Mutex<Sizes>>);

#[derive(Debug)]
struct Sizes {
    /// The run's `--max-executions`.
    max: u64,
    /// Sizes of ended blocks at or above `known`.
    ended: BTreeMap<u64, u64>,
    /// Every block below `known` ended, with `before` executions between
    /// them.
    known: u64,
    before: u64,
    /// Blocks a bug was found in whose start is not known yet, and the
    /// first global index of those whose start is: only bugs are numbered
    /// after the run, so only their blocks are remembered.
    marked: BTreeSet<u64>,
    starts: BTreeMap<u64, u64>,
    /// The position of the budget's last execution (global index
    /// `max - 1`), once the blocks up to it are known.
    cut: Option<u64>,
}

impl OpenSizes {
    /// For a run of at most `max` executions.
    pub fn new(max: u64) -> Self {
        OpenSizes(Arc::new(Mutex::new(Sizes {
            max,
            ended: BTreeMap::new(),
            known: 0,
            before: 0,
            marked: BTreeSet::new(),
            starts: BTreeMap::new(),
            cut: None,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sizes> {
        // Every update leaves the sizes whole; a panicking worker ends the
        // run anyway.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Block `block` ended after `size` executions.
    pub fn ended(&self, block: u64, size: u64) {
        let mut s = self.lock();
        if block < s.known {
            return;
        }
        s.ended.insert(block, size);
        let s = &mut *s;
        while let Some(size) = s.ended.remove(&s.known) {
            let last = s.max.saturating_sub(1);
            if s.cut.is_none() && s.max > 0 && (s.before..s.before + size).contains(&last) {
                s.cut = Some(open_position(s.known, last - s.before));
            }
            if s.marked.remove(&s.known) {
                s.starts.insert(s.known, s.before);
            }
            s.known += 1;
            s.before += size;
        }
    }

    /// The least global index `position` can have: the blocks below it
    /// that ended with their sizes, the others with one execution each
    /// (asked about positions of blocks that have not ended).
    pub fn lower_bound(&self, position: u64) -> u64 {
        let (block, offset) = split_position(position);
        let s = self.lock();
        if block < s.known {
            return offset;
        }
        let (count, sum) =
            (s.ended.range(s.known..block)).fold((0, 0u64), |(c, t), (_, &n)| (c + 1, t + n));
        s.before + sum + (block - s.known - count) + offset
    }

    /// A bug was found at `position`: its block's start is kept, to number
    /// it once the blocks below it ended.
    pub fn bug_at(&self, position: u64) {
        let block = split_position(position).0;
        let mut s = self.lock();
        if block == s.known {
            let before = s.before;
            s.starts.insert(block, before);
        } else if block > s.known {
            s.marked.insert(block);
        }
    }

    /// The global index of `position`, once every block below it ended (as
    /// every block below a bug has, when the run ends): known for the
    /// first block that has not ended, and for blocks a bug was found in
    /// ([`bug_at`](Self::bug_at)).
    pub fn index(&self, position: u64) -> Option<u64> {
        let (block, offset) = split_position(position);
        let s = self.lock();
        match s.starts.get(&block) {
            Some(start) => Some(start + offset),
            None => (block == s.known).then_some(s.before + offset),
        }
    }

    /// The position of the budget's last execution, once the blocks up to
    /// it ended.
    pub fn cut(&self) -> Option<u64> {
        self.lock().cut
    }

    /// When the run is over: the position of the budget's last execution,
    /// in the first block that did not end if not before it (the workers
    /// stop inside a block when the budget ends there, or at a bug).
    pub fn last_in_budget(&self) -> u64 {
        let s = self.lock();
        s.cut.unwrap_or_else(|| {
            let offset = s.max.saturating_sub(1).saturating_sub(s.before);
            open_position(s.known, offset)
        })
    }

    /// A position at or below the budget's cut and every bug still to be
    /// numbered: the start of the first block that has not ended, or the
    /// cut itself once known.
    pub fn settled(&self) -> u64 {
        let s = self.lock();
        s.cut.unwrap_or_else(|| open_position(s.known, 0))
    }
}

/// A position's block and offset ([`Blocks::Open`]).
pub fn split_position(position: u64) -> (u64, u64) {
    (position >> OPEN_SHIFT, position & ((1 << OPEN_SHIFT) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_executions_are_their_own_blocks() {
        let p = Blocks::Single.locate(7);
        assert_eq!((p.block, p.start, p.len, p.round), (7, 7, 1, 0));
        assert!(p.is_last(7));
        assert_eq!(Blocks::Single.start(7), 7);
    }

    #[test]
    fn rounds_grow_in_number_and_in_length() {
        // Round 0: 2 blocks of 1; round 1: 6 blocks of 2; round 2: 18 of 3.
        let b = Blocks::Rounds { c1: 2, c2: 3 };
        let mut expected = Vec::new();
        let (mut block, mut start) = (0, 0);
        for (count, len) in [(2u64, 1u64), (6, 2), (18, 3)] {
            for _ in 0..count {
                for _ in 0..len {
                    expected.push((block, start, len));
                }
                block += 1;
                start += len;
            }
        }
        for (i, &(block, start, len)) in expected.iter().enumerate() {
            let p = b.locate(i as u64);
            assert_eq!((p.block, p.start, p.len), (block, start, len), "index {i}");
            assert_eq!(u64::from(p.round) + 1, len);
            assert_eq!(b.start(block), start);
            assert_eq!(p.is_last(i as u64), i as u64 == start + len - 1);
        }
        assert_eq!(b.locate(2 + 12).in_round, 0, "round 2's first block");
    }

    #[test]
    fn open_sizes_number_positions_as_the_blocks_end() {
        // Blocks of 3, 1, 4 executions, ending out of order; budget 6.
        let sizes = OpenSizes::new(6);
        let p = open_position;
        assert_eq!(sizes.lower_bound(p(2, 1)), 3, "two blocks of at least one");
        sizes.ended(1, 1);
        assert_eq!(sizes.lower_bound(p(2, 1)), 1 + 1 + 1);
        assert_eq!((sizes.index(p(2, 0)), sizes.cut()), (None, None));
        assert_eq!(sizes.settled(), p(0, 0));
        sizes.bug_at(p(3, 2));
        sizes.ended(0, 3);
        assert_eq!(sizes.index(p(2, 1)), Some(5));
        // Ended blocks are forgotten, but for those with a bug.
        assert_eq!(sizes.index(p(1, 0)), None);
        assert_eq!(sizes.index(p(3, 0)), None);
        assert_eq!(sizes.lower_bound(p(2, 3)), 7);
        assert_eq!(sizes.settled(), p(2, 0));
        sizes.ended(2, 4);
        assert_eq!(sizes.index(p(3, 2)), Some(10), "3 + 1 + 4, then 2 in");
        // Global index 5 is block 2's second execution.
        assert_eq!(sizes.cut(), Some(p(2, 1)));
        assert_eq!(sizes.last_in_budget(), p(2, 1));
        assert_eq!(sizes.settled(), p(2, 1));
        // A budget that ends in a block that never ended.
        let sizes = OpenSizes::new(5);
        sizes.ended(0, 3);
        assert_eq!(sizes.cut(), None);
        assert_eq!(sizes.last_in_budget(), p(1, 1));
        assert_eq!(split_position(p(7, 9)), (7, 9));
        assert_eq!(Blocks::Open.locate(p(7, 9)).block, 7);
    }

    #[test]
    fn huge_rounds_saturate_instead_of_overflowing() {
        let b = Blocks::Rounds {
            c1: u64::MAX / 2,
            c2: u64::MAX,
        };
        let p = b.locate(u64::MAX - 1);
        assert_eq!(p.round, 1);
        // Round 0's blocks are single, round 1's pairs.
        assert_eq!(b.start(u64::MAX / 2 + 3), u64::MAX / 2 + 6);
        assert_eq!(b.start(u64::MAX), u64::MAX);
        assert_eq!(b.locate(5).block, 5);
    }
}
