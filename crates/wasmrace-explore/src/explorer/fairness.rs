//! Fair scheduling (Musuvathi & Qadeer, "Fair stateless model checking",
//! PLDI 2008, §3): the explorer narrows the enabled threads every strategy
//! sees, so that a thread spinning on `yield_now` gives way to the threads
//! it waits for, and every strategy explores only fair schedules.
//!
//! **The algorithm.** A priority relation `P` (`t` below `u`: `t` may not
//! run while `u` is enabled) and, per thread `t`, three sets since `t`'s
//! last yield: `E(t)`, the threads continuously enabled; `D(t)`, the threads
//! `t` disabled; `S(t)`, the threads scheduled. A thread is schedulable when
//! it is enabled and no enabled thread has priority over it. After thread
//! `s` takes a step: `P` loses every edge into `s` (it ran: nobody waits for
//! it any more); every `E(t)` keeps only the threads still enabled; `D(s)`
//! gains the threads the step disabled; every `S(t)` gains `s`. When the
//! step is a yield, `s` goes below every thread of `(E(s) ∪ D(s)) \ S(s)`
//! (those it may be starving), then `E(s)` starts again from the enabled
//! threads and `D(s)`, `S(s)` from empty.
//!
//! **The unfairness bound.** A thread's first `bound` yields add no edges
//! (`Config::fairness_bound`, `--fairness-bound`, default
//! [`DEFAULT_FAIRNESS_BOUND`]): a waiting loop may spin that many times
//! before the threads it waits for must run, so schedules where a waiter
//! polls more than once stay covered, and a thread is tracked only from its
//! `bound`-th yield on. With no thread tracked, a step costs two branches
//! and nothing is allocated.
//!
//! **On our interfaces.** Threads get a slot (a bit in 64-bit sets) when
//! fairness first needs them; threads beyond the 64th of an execution are
//! never deprioritised and never deprioritise others. The state is kept per
//! step where it changed, so resuming at a prefix restores it exactly; a
//! saved state carries its own.

use crate::program::ThreadView;
use wasmrace_trace::{OpKind, Tid};

/// `Config::fairness_bound`'s default: each thread's first 2 yields are
/// free, from its third on it gives way.
pub const DEFAULT_FAIRNESS_BOUND: u32 = 2;

/// Slots a 64-bit thread set can hold.
const SLOTS: usize = 64;

/// What fairness knows about one thread of the execution.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fair {
    tid: Tid,
    /// Yields so far in this execution.
    yields: u32,
    /// 0-based step index of its last yield.
    last_yield: u64,
    /// Tracked: `e`, `d` and `s` are kept (from its `bound`-th yield on).
    tracked: bool,
    /// `E(t)`, `D(t)`, `S(t)` as slot bits.
    e: u64,
    d: u64,
    s: u64,
    /// The slots with priority over this thread (its row of `P`).
    below: u64,
}

/// The fairness state after some prefix of an execution.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FairState {
    /// By slot, in the order fairness first needed them.
    threads: Vec<Fair>,
    /// The enabled threads after the last step, as slot bits (kept only
    /// while some thread is tracked).
    enabled: u64,
    /// Some thread is tracked.
    tracking: bool,
    /// Some thread has an edge in `P`.
    prioritised: bool,
}

impl FairState {
    fn slot(&mut self, tid: Tid) -> Option<usize> {
        if let Some(i) = self.threads.iter().position(|f| f.tid == tid) {
            return Some(i);
        }
        if self.threads.len() >= SLOTS {
            return None;
        }
        self.threads.push(Fair {
            tid,
            yields: 0,
            last_yield: 0,
            tracked: false,
            e: 0,
            d: 0,
            s: 0,
            below: 0,
        });
        Some(self.threads.len() - 1)
    }

    fn bit(&mut self, tid: Tid) -> u64 {
        self.slot(tid).map_or(0, |i| 1 << i)
    }

    fn enabled_bits(&mut self, threads: &[ThreadView]) -> u64 {
        let mut bits = 0;
        for t in threads.iter().filter(|t| t.pending.enabled) {
            bits |= self.bit(t.tid);
        }
        bits
    }

    /// Folds into `hash` (a program state's) what of this state decides
    /// which threads fairness lets run from here on, so that a state cache
    /// keyed by the result never prunes a state reached with more threads
    /// free under one explored with fewer (see [`Fairness::key`]). Per
    /// thread, by tid and skipping threads fairness knows nothing about:
    /// its yields up to `bound + 1` (more make no difference), whether it
    /// is tracked, and `E`, `D`, `S` and its row of `P` as sorted tids.
    /// The step of its last yield is left out: only the step limit's
    /// livelock message reads it.
    fn key(&self, bound: u32, hash: [u8; 32]) -> [u8; 32] {
        let known = |f: &&Fair| f.yields > 0 || f.tracked || f.below != 0;
        let mut threads: Vec<&Fair> = self.threads.iter().filter(known).collect();
        if threads.is_empty() {
            return hash;
        }
        threads.sort_unstable_by_key(|f| f.tid);
        let mut h = blake3::Hasher::new();
        h.update(&hash);
        let tids = |bits: u64, h: &mut blake3::Hasher| {
            let mut set: Vec<u64> = (0..SLOTS)
                .filter(|i| bits & (1 << i) != 0)
                .filter_map(|i| self.threads.get(i).map(|f| f.tid.0))
                .collect();
            set.sort_unstable();
            h.update(&(set.len() as u64).to_le_bytes());
            for t in set {
                h.update(&t.to_le_bytes());
            }
        };
        for f in threads {
            h.update(&f.tid.0.to_le_bytes());
            h.update(&f.yields.min(bound.saturating_add(1)).to_le_bytes());
            h.update(&[u8::from(f.tracked)]);
            for bits in [f.e, f.d, f.s, f.below] {
                tids(bits, &mut h);
            }
        }
        *h.finalize().as_bytes()
    }

    /// The thread's yields and the step of its last one, if it has yielded.
    pub(crate) fn last_yield(&self, tid: Tid) -> Option<(u32, u64)> {
        let f = self.threads.iter().find(|f| f.tid == tid)?;
        (f.yields > 0).then_some((f.yields, f.last_yield))
    }
}

/// See the module documentation: the fairness state of the current path,
/// with the states after the steps where it changed.
pub(crate) struct Fairness {
    /// `None`: fairness off (yields are still counted, for livelocks).
    bound: Option<u32>,
    /// The state before the first step: with bound 0 every thread is
    /// tracked from its creation.
    initial: FairState,
    cur: FairState,
    /// (prefix length, state after it), shallowest first.
    history: Vec<(usize, FairState)>,
    /// Threads a strategy sees: the program's, with the unschedulable ones
    /// disabled; reused, rebuilt only when `P` hides some thread.
    view: Vec<ThreadView>,
}

impl Fairness {
    pub(crate) fn new(bound: Option<u32>) -> Self {
        let initial = FairState {
            tracking: bound == Some(0),
            ..FairState::default()
        };
        Fairness {
            bound,
            cur: initial.clone(),
            initial,
            history: Vec::new(),
            view: Vec::new(),
        }
    }

    /// The key a state cache files the current state under, `hash` being
    /// the program state's: `hash` itself with fairness off or while it
    /// knows nothing, else `hash` with the fairness state folded in. The
    /// threads fairness lets run below a state depend on the path to it (a
    /// thread that yielded too often gives way to the ones it may starve),
    /// so one program state reached by two paths can have different
    /// subtrees; keyed by the program state alone, a cache that explored it
    /// with a spinner held back would prune it reached with the spinner
    /// free, and miss what the spinner does first (a silent pass).
    pub(crate) fn key(&self, hash: [u8; 32]) -> [u8; 32] {
        match self.bound {
            Some(bound) => self.cur.key(bound, hash),
            None => hash,
        }
    }

    /// The state after the current path.
    pub(crate) fn state(&self) -> &FairState {
        &self.cur
    }

    /// Back to the state after the path's first `len` steps.
    pub(crate) fn rewind(&mut self, len: usize) {
        while self.history.last().is_some_and(|(l, _)| *l > len) {
            self.history.pop();
        }
        self.cur = match self.history.last() {
            Some((_, s)) => s.clone(),
            None => self.initial.clone(),
        };
    }

    /// Starts from a saved state whose path has `len` steps.
    pub(crate) fn start_at(&mut self, len: usize, state: FairState) {
        self.history.clear();
        self.history.push((len, state.clone()));
        self.cur = state;
    }

    /// The threads a strategy may choose from: `threads` itself unless
    /// some enabled thread has an enabled thread above it; and which of
    /// them (bit `i`: the `i`-th) are enabled but shown disabled.
    pub(crate) fn schedulable<'a>(
        &'a mut self,
        threads: &'a [ThreadView],
    ) -> (&'a [ThreadView], u64) {
        if !self.cur.prioritised || self.bound.is_none() {
            return (threads, 0);
        }
        let enabled = self.cur.enabled;
        let hidden: u64 = self
            .cur
            .threads
            .iter()
            .enumerate()
            .filter(|(i, f)| enabled & (1 << i) != 0 && f.below & enabled != 0)
            .fold(0, |acc, (i, _)| acc | 1 << i);
        // `P` stays acyclic, so some enabled thread is always schedulable;
        // if not, filtering would invent a deadlock, so nothing is hidden.
        if hidden == 0 || hidden == enabled {
            return (threads, 0);
        }
        self.view.truncate(threads.len());
        let mut shown_hidden = 0;
        for (i, t) in threads.iter().enumerate() {
            match self.view.get_mut(i) {
                Some(v) => {
                    v.tid = t.tid;
                    v.pending.op = t.pending.op;
                    v.pending.enabled = t.pending.enabled;
                    v.pending.alts = t.pending.alts;
                    v.pending.site = t.pending.site;
                    v.pending.accesses.clone_from(&t.pending.accesses);
                }
                None => self.view.push(t.clone()),
            }
            let slot = self.cur.threads.iter().position(|f| f.tid == t.tid);
            if slot.is_some_and(|s| hidden & (1 << s) != 0) {
                self.view[i].pending.enabled = false;
                shown_hidden |= 1u64.checked_shl(i as u32).unwrap_or(0);
            }
        }
        (&self.view, shown_hidden)
    }

    /// Updates the state for step `step` (0-based) of thread `tid` running
    /// `op`, with `after` the threads once it ran.
    fn stepped(&mut self, tid: Tid, op: Option<OpKind>, after: &[ThreadView], step: u64) {
        let yielded = op == Some(OpKind::Yield);
        if !yielded && !self.cur.tracking && !self.cur.prioritised {
            return;
        }
        let st = &mut self.cur;
        let sbit = st.bit(tid);
        let before = st.enabled;
        let now = if st.tracking || yielded {
            st.enabled_bits(after)
        } else {
            0
        };
        // P \ (T × {s}), then the sets of the tracked threads.
        let from_creation = self.bound == Some(0);
        let mut prioritised = false;
        for f in &mut st.threads {
            if from_creation && !f.tracked {
                // First seen now: continuously enabled since then.
                f.tracked = true;
                f.e = now;
            }
            f.below &= !sbit;
            if f.tracked {
                f.e &= now;
                f.s |= sbit;
            }
            prioritised |= f.below != 0;
        }
        st.prioritised = prioritised;
        let Some(slot) = st.threads.iter().position(|f| f.tid == tid) else {
            st.enabled = now;
            return;
        };
        let f = &mut st.threads[slot];
        if f.tracked {
            f.d |= before & !now;
        }
        if yielded {
            f.yields += 1;
            f.last_yield = step;
            if let Some(bound) = self.bound {
                if f.tracked && f.yields > bound {
                    let starving = (f.e | f.d) & !f.s & !sbit;
                    f.below |= starving;
                    st.prioritised |= starving != 0;
                }
                if f.yields >= bound {
                    f.tracked = true;
                    st.tracking = true;
                    f.e = now;
                    f.d = 0;
                    f.s = 0;
                }
            }
        }
        st.enabled = now;
    }

    /// Records step `step` as [`stepped`](Self::stepped) does, and keeps
    /// the state after it (the path then has `step + 1` steps) when the
    /// step could change it, for resumes.
    pub(crate) fn record(&mut self, tid: Tid, op: Option<OpKind>, after: &[ThreadView], step: u64) {
        let touches = op == Some(OpKind::Yield) || self.cur.tracking || self.cur.prioritised;
        if touches {
            self.stepped(tid, op, after, step);
            self.history.push((step as usize + 1, self.cur.clone()));
        }
    }
}
