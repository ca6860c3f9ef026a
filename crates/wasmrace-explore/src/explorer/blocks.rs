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

/// How a strategy's executions group into blocks
/// ([`Capabilities::blocks`](crate::Capabilities::blocks)), numbered from
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
            Blocks::Single | Blocks::Rounds { .. } => 0,
        }
    }

    /// Round `round`'s number of blocks and their length.
    fn round(self, round: u32) -> (u64, u64) {
        match self {
            Blocks::Single | Blocks::Prologue(_) => (u64::MAX, 1),
            Blocks::Rounds { c1, c2 } => (
                c1.max(1).saturating_mul(c2.max(1).saturating_pow(round)),
                u64::from(round) + 1,
            ),
        }
    }
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
