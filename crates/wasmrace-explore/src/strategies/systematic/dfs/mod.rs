//! Concuerror-style depth-first search over interleavings (Christakis,
//! Gotovos & Sagonas, ICST 2013, Algorithm 1), optionally with iterative
//! preemption bounding (§VI-B, after Musuvathi & Qadeer, PLDI 2007).
//!
//! **Unbounded.** Algorithm 1 keeps a stack of unexplored prefixes: at every
//! step it runs one enabled process and pushes `prefix + p` for every other
//! enabled `p`. We keep the same search as one *frame* per depth of the
//! current path (the decisions still to try there), which is that stack
//! without the prefix copies: the prefix of an alternative is the current
//! path up to its depth. Backtracking resumes the previous execution at the
//! deepest frame with an untried decision (`Start::Resume`), and the explorer
//! gets back there by restoring a snapshot or replaying.
//!
//! **Preemption bounded, iteratively.** With bound `c`, schedules are explored
//! in iterations `k = 0, 1, ..., c`; iteration `k` explores exactly the
//! schedules with `k` preemptions. Within an iteration only non-preemptive
//! decisions branch (frames, `S_current` of the paper); a preemptive
//! alternative is *deferred* to `S_next` as a prefix, or, in the last
//! iteration, pruned (counted, and reported through `bound_hit`). Iteration
//! `k + 1` then explores the subtree under each deferred prefix, whose last
//! decision is its `(k+1)`-th preemption, again branching only
//! non-preemptively. So every schedule with at most `c` preemptions is run
//! exactly once, in nondecreasing order of preemptions.
//!
//! Deferred prefixes live in a shared prefix tree (an arena of
//! `(parent, decision)` nodes with reference counts), so deferring an
//! alternative costs one node, not a copy of the path, and nodes are freed
//! as soon as no deferred prefix needs them.
//!
//! **Blocking avoidance and §VI-B.** The paper has to repair `S_next` when a
//! process it had continued turns out to block (the switch it had counted as
//! a preemption was not one). Our programs expose enabledness *before* each
//! step, so a blocked thread is never scheduled and `Context::is_preemption`
//! classifies every switch correctly when the alternative is created: the
//! paper's adjusted algorithm falls out without repair. Wrapping the program
//! in [`WithoutBlockingAvoidance`](crate::blocking::WithoutBlockingAvoidance)
//! gives the naive search back for comparison.
//!
//! **State caching** (`Dfs::with_state_cache`, `--state-cache`): a
//! [`StateCache`] of program state hashes (as SES keeps, FSE 2015 §3). When
//! the search reaches a state at a new depth (not one it backtracks to, nor
//! a step of a replayed deferred prefix) whose key is cached, it abandons the
//! execution there: the subtree below was explored from the earlier visit.
//! The key is what that subtree depends on. Unbounded, that is the state
//! as the explorer hashes it: the program state with the fairness state
//! folded in (which threads fair scheduling lets run depends on the path:
//! `Fairness::key`); every decision fairness lets through is explored
//! below it, whatever the order.
//! With a preemption bound it also includes the thread that ran last and
//! whether it yielded, since they decide which switches are preemptions, and
//! budgets only shrink: iteration `k` explores schedules with exactly `k`
//! preemptions, so a state first seen in iteration `j <= k` was explored
//! with at least as many preemptions left (`c - j >= c - k`), its
//! preemptive alternatives deferred to later iterations like any other. A
//! state seen with a smaller remaining budget never covers one seen with a
//! larger. Our DFS has no sleep sets or backtrack sets whose contents would
//! depend on the path (each frame tries every enabled decision), so nothing
//! else needs to go into the key. Cycles in the state graph (a `yield_now`
//! spin loop) are cut at the repeated state instead of running into the step
//! limit. Evictions at the cap only cost re-exploration. Workers sharing the
//! tree (`check --jobs`) share the cache too (`Split::Shared`,
//! `shared_cache.rs`): it keeps each state's least order key, so that they
//! report what one search reports (`explorer/visits.rs`).
//!
//! **Partitions** (`Split::ByPrefix`, without a state cache): the subtree
//! below a prefix is explored the same whichever other subtrees are, so
//! partitions may each take the subtrees below the prefixes they own. Each
//! execution's place in the search order is its [`order_key`]: with the
//! preemptions of the path at depths `p1 < ... < pk`, the key is `(k, seg0,
//! r1, seg1, ..., rk, segk)`, where `segi` lists the ranks of the
//! non-preemptive decisions between two preemptions (rank in the frame's
//! order) and `ri` the rank of the `i`-th preemption among the preemptive
//! alternatives of its step. Iteration `k` runs the subtrees deferred in
//! iteration `k - 1` in deferral order, which is the preorder of the node
//! where each was deferred, then rank; preorder within a subtree is
//! lexicographic order with a prefix before its extensions; so that tuple,
//! compared element by element (each `segi` lexicographically, shorter
//! first), is exactly the order of the search. It is not the order of the
//! decision sequences themselves: a preemption deferred at a node comes
//! after the non-preemptive subtree below that node, though it ranks later
//! there.
//!
//! [`order_key`]: crate::Standing::order_key
//!
//! **Order.** At each step: continue the last thread (all its alternatives,
//! ascending), then the other threads in creation order. So the first
//! execution is non-preemptive. After a `yield_now` the yielding thread comes
//! last instead: switching is free then, and a thread that yields in a spin
//! loop would otherwise spin until the step limit in the very first
//! execution.

use crate::explorer::steal::SubtreePool;
use crate::explorer::visits::{ExpId, Logged, NO_EXPANSION};
use crate::explorer::Split;
use crate::prefix_tree::{NodeId, PrefixTree, NIL};
use crate::state_cache::StateCache;
use crate::strategies::descriptor::{Descriptor, Knob, StrategyOptions, Takes};
use crate::strategy::{
    BoundHit, Context, Profile, Role, Splitting, Standing, Start, Stat, Strategy,
};
use std::sync::Arc;
use wasmrace_trace::{mix64, Decision, OpKind};

mod deferred;
mod shared_cache;
mod steal;

use deferred::Deferred;

/// Options of [`Dfs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DfsOptions {
    /// Explore only schedules with at most this many preemptions
    /// (`--preemption-bound`); `None` explores every schedule.
    pub preemption_bound: Option<u32>,
}

/// `dfs` in the [registry](crate::strategies::registry):
/// `--preemption-bound` (default 2), `--state-cache`, and `--cache-mb` with
/// it. Reported as `dfs` with or without the cache.
pub const DESCRIPTOR: Descriptor = Descriptor {
    name: "dfs",
    about: "Depth-first search over interleavings with iterative preemption bounding: \
            exhaustive within the bound (Concuerror, ICST 2013)",
    takes: &[
        Takes::always(Knob::PreemptionBound),
        Takes::always(Knob::StateCache),
        Takes {
            knob: Knob::CacheMb,
            only_with: Some(Knob::StateCache),
        },
    ],
    always: &[],
    defaults: StrategyOptions {
        preemption_bound: Some(Some(2)),
        state_cache: Some(false),
        cache_mb: Some(crate::strategies::SesOptions::DEFAULT.cache_mb),
        ..StrategyOptions::NONE
    },
    refuses: &[],
    build: |o, _| {
        let dfs = Dfs::new(DfsOptions {
            preemption_bound: preemption_bound(o),
        });
        match state_cache_mb(o) {
            Some(mb) => Box::new(dfs.with_state_cache(mb)),
            None => Box::new(dfs),
        }
    },
    describe: |o, _| {
        let bound = match preemption_bound(o) {
            Some(b) => format!("preemption bound {b}"),
            None => "unbounded".into(),
        };
        match state_cache_mb(o) {
            Some(mb) => format!("dfs, {bound}, state cache {mb} MiB"),
            None => format!("dfs, {bound}"),
        }
    },
    options_json: |o| {
        let mut json = serde_json::Map::new();
        json.insert("preemption_bound".into(), preemption_bound(o).into());
        if let Some(mb) = state_cache_mb(o) {
            json.insert("state_cache_mb".into(), mb.into());
        }
        json
    },
};

/// The preemption bound of resolved options (DFS's default when unset).
fn preemption_bound(o: &StrategyOptions) -> Option<u32> {
    o.preemption_bound.unwrap_or(Some(2))
}

/// The state cache's size when the cache is on.
fn state_cache_mb(o: &StrategyOptions) -> Option<u64> {
    let mb = o
        .cache_mb
        .unwrap_or(crate::strategies::SesOptions::DEFAULT.cache_mb);
    (o.state_cache == Some(true)).then_some(mb)
}

/// Deferred prefixes share their beginnings in a prefix tree; each step
/// keeps its mark (see `Dfs::marks`), so that a deferred subtree's place in
/// the search order is known without running it (work stealing).
type Arena = PrefixTree<(Decision, u32)>;

/// The decisions to try at one depth of the current path.
#[derive(Debug)]
struct Frame {
    /// In exploration order; `alts[next - 1]` is the one on the current path.
    alts: Vec<Decision>,
    next: usize,
    /// Arena node of the path through `alts[next - 1]`, interned only when a
    /// deferred alternative below needs it (bounded search).
    node: NodeId,
    /// The deepest expansion of a shared state cache on the path to this
    /// depth, this one's if it made one (`shared_cache.rs`).
    exp: ExpId,
    /// Some of its alternatives were donated to other workers (`explorer/steal/`).
    donated: bool,
}

impl Frame {
    fn chosen(&self) -> Decision {
        self.alts[self.next - 1]
    }
}

/// Depth-first search over interleavings; see the module documentation.
#[derive(Debug)]
pub struct Dfs {
    opts: DfsOptions,
    started: bool,
    exhausted: bool,
    /// Decisions of the current (or, between executions, the last) execution.
    path: Vec<Decision>,
    /// For each decision of `path`, its rank among the alternatives of its
    /// class at its step, shifted left once, with the low bit set for a
    /// preemption (see the module documentation's partitions).
    marks: Vec<u32>,
    /// The prefix under which the current subtree is explored (empty in the
    /// unbounded search and in iteration 0): decisions at depths below
    /// `forced.len()` are replayed from it, and frames start at its end.
    forced: Vec<Decision>,
    /// Arena node of `forced` (held), `NIL` when empty.
    base_node: NodeId,
    /// The deepest expansion of a shared state cache on `forced`.
    base_exp: ExpId,
    /// `frames[i]` is depth `forced.len() + i`.
    frames: Vec<Frame>,
    /// The next `decide` continues `frames.last()` with its next alternative.
    resuming: bool,
    /// The current iteration: schedules explored now have this many
    /// preemptions (bounded search only).
    iteration: u32,
    /// Deferred prefixes of this iteration, popped from the end.
    s_current: Vec<Deferred>,
    /// Deferred prefixes for the next iteration, in deferral order.
    s_next: Vec<Deferred>,
    arena: Arena,
    pruned: u64,
    deferred: u64,
    nondeterministic: u64,
    /// Visited states, when state caching is on.
    cache: Option<StateCache>,
    /// Its size in MiB.
    cache_mb: u64,
    /// The state cache shared with other workers, in place of `cache`
    /// (`check --jobs`).
    shared: Option<shared_cache::SharedCache>,
    /// The hash of the state the next `decide` is about.
    hash: Option<[u8; 32]>,
    cache_hits: u64,
    /// States (keys) the cache took as new.
    cache_states: u64,
    /// The pool of subtrees shared with other workers (`check --jobs`),
    /// when this search is one of several sharing the tree (`explorer/steal/`).
    pool: Option<Arc<SubtreePool>>,
    /// Subtrees started so far (`Standing::stretch`).
    stretch: u64,
    /// A frame some of whose alternatives were donated was dropped: the
    /// next executions follow the donated subtrees in the search order, so
    /// they start a new stretch.
    jumped: bool,
    /// The pool said the run is over.
    left: bool,
    /// The stretch during which the last subtree was deferred to
    /// `s_next`, if nothing was taken from that list since.
    deferred_in: Option<u64>,
    /// Work was dropped since the last deferred subtree started: the next
    /// one does not follow it.
    gap: bool,
    /// The pool's threshold (the least bug key, or the budget's cut) as
    /// last read: work after it is abandoned, the current subtree's
    /// between executions and a deferred subtree's when it would start.
    threshold: Option<Vec<u32>>,
    /// How often the pool's threshold had moved when last read.
    threshold_seen: u64,
    /// The pool was told that work after the threshold was dropped.
    told_abandoned: bool,
}

impl Dfs {
    /// DFS with `opts`.
    pub fn new(opts: DfsOptions) -> Self {
        Dfs {
            opts,
            started: false,
            exhausted: false,
            path: Vec::new(),
            marks: Vec::new(),
            forced: Vec::new(),
            base_node: NIL,
            base_exp: NO_EXPANSION,
            frames: Vec::new(),
            resuming: false,
            iteration: 0,
            s_current: Vec::new(),
            s_next: Vec::new(),
            arena: Arena::default(),
            pruned: 0,
            deferred: 0,
            nondeterministic: 0,
            cache: None,
            cache_mb: 0,
            shared: None,
            hash: None,
            cache_hits: 0,
            cache_states: 0,
            pool: None,
            stretch: 0,
            jumped: false,
            left: false,
            deferred_in: None,
            gap: false,
            threshold: None,
            threshold_seen: 0,
            told_abandoned: false,
        }
    }

    /// Explores every schedule.
    pub fn unbounded() -> Self {
        Self::new(DfsOptions {
            preemption_bound: None,
        })
    }

    /// Explores the schedules with at most `bound` preemptions, fewest first.
    pub fn with_preemption_bound(bound: u32) -> Self {
        Self::new(DfsOptions {
            preemption_bound: Some(bound),
        })
    }

    /// Turns state caching on, with at most `cache_mb` MiB of state hashes
    /// (see the module documentation; 0 keeps it off).
    pub fn with_state_cache(mut self, cache_mb: u64) -> Self {
        let cache = StateCache::new(cache_mb);
        self.cache = cache.enabled().then_some(cache);
        self.cache_mb = cache_mb;
        self
    }

    /// The state cache, when on.
    pub fn state_cache(&self) -> Option<&StateCache> {
        self.cache.as_ref()
    }

    /// Executions cut short because they reached a cached state.
    pub fn cache_hits(&self) -> u64 {
        self.cache_hits
    }

    /// Distinct states (cache keys) the search explored from.
    pub fn states_explored(&self) -> u64 {
        self.cache_states
    }

    /// The cache key of the state `ctx` is about: the state hash, plus,
    /// under a preemption bound, the last thread and whether it yielded.
    fn cache_key(&self, hash: [u8; 32], ctx: &Context<'_>) -> [u8; 32] {
        if self.opts.preemption_bound.is_none() {
            return hash;
        }
        let (last, yielded) = match ctx.last {
            None => (0, 2),
            Some((t, op)) => (t.0, u64::from(op == Some(OpKind::Yield))),
        };
        let salt = mix64(mix64(last ^ 0x6466_735f_6b65_7900) ^ yielded);
        let mut key = hash;
        for (k, lane) in key.chunks_mut(8).enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(lane);
            let v = mix64(u64::from_le_bytes(w) ^ salt.rotate_left(16 * k as u32));
            lane.copy_from_slice(&v.to_le_bytes());
        }
        key
    }

    /// The options it runs with.
    pub fn options(&self) -> DfsOptions {
        self.opts
    }

    /// Preemptive alternatives cut off by the bound. Each is the root of at
    /// least one unexplored schedule, so this is a lower bound on the number
    /// of schedules pruned (counting them exactly would mean exploring them).
    pub fn pruned(&self) -> u64 {
        self.pruned
    }

    /// Preemptive alternatives deferred to a later iteration so far.
    pub fn deferred(&self) -> u64 {
        self.deferred
    }

    /// The iteration in progress: the number of preemptions of the schedules
    /// being explored (always 0 without a bound).
    pub fn current_preemptions(&self) -> u32 {
        self.iteration
    }

    /// Executions abandoned because a decision the search had recorded was
    /// not enabled when it came back to it: the program is not deterministic
    /// (the same decisions did not lead to the same state).
    pub fn nondeterministic(&self) -> u64 {
        self.nondeterministic
    }

    /// Prefix-tree nodes alive (deferred prefixes and their ancestors).
    pub fn stored_prefix_nodes(&self) -> usize {
        self.arena.live
    }

    /// Enabled decisions in exploration order (see the module docs).
    fn ordered(ctx: &Context<'_>) -> Vec<Decision> {
        let last = ctx.last.map(|(t, _)| t);
        let yielded = matches!(ctx.last, Some((_, Some(OpKind::Yield))));
        let of = |t: &crate::program::ThreadView| {
            let tid = t.tid;
            (0..t.pending.alts).map(move |a| Decision::new(tid, a))
        };
        let mut out = Vec::new();
        let last_view = last
            .and_then(|t| ctx.thread(t))
            .filter(|v| v.pending.enabled);
        if let (Some(v), false) = (last_view, yielded) {
            out.extend(of(v));
        }
        for v in ctx
            .threads
            .iter()
            .filter(|v| v.pending.enabled && Some(v.tid) != last)
        {
            out.extend(of(v));
        }
        if let (Some(v), true) = (last_view, yielded) {
            out.extend(of(v));
        }
        out
    }

    /// The mark of decision `d` in `ctx` (see `marks`), for a decision not
    /// taken from a frame: a step of a deferred prefix.
    fn mark(&self, ctx: &Context<'_>, d: Decision) -> u32 {
        let bounded = self.opts.preemption_bound.is_some();
        let preempts = |x: &Decision| bounded && ctx.is_preemption(x.tid);
        let class = preempts(&d);
        let rank = Self::ordered(ctx)
            .iter()
            .filter(|x| preempts(x) == class)
            .position(|x| *x == d)
            .unwrap_or(0);
        ((rank as u32) << 1) | u32::from(class)
    }

    /// The arena node of the current path's first `depth` decisions,
    /// interning the frames' chosen decisions on the way.
    fn path_node(&mut self, depth: usize) -> NodeId {
        let base = self.forced.len();
        if depth == base {
            return self.base_node;
        }
        let top = depth - base - 1;
        let mut j = top + 1;
        while j > 0 && self.frames[j - 1].node == NIL {
            j -= 1;
        }
        let mut parent = if j == 0 {
            self.base_node
        } else {
            self.frames[j - 1].node
        };
        for (k, f) in self.frames.iter_mut().enumerate().take(top + 1).skip(j) {
            parent = self.arena.push(parent, (f.chosen(), self.marks[base + k]));
            f.node = parent;
        }
        parent
    }

    fn pop_frame(&mut self) {
        if let Some(f) = self.frames.pop() {
            self.jumped |= f.donated;
            if f.node != NIL {
                self.arena.release(f.node);
            }
        }
    }

    /// A new frame at the current depth, whose deepest expansion is `exp`;
    /// returns the decision to take.
    fn push_frame(&mut self, ctx: &Context<'_>, exp: ExpId) -> Option<Decision> {
        let ordered = Self::ordered(ctx);
        let alts = match self.opts.preemption_bound {
            None => ordered,
            Some(bound) => {
                let (free, preemptive): (Vec<_>, Vec<_>) =
                    ordered.into_iter().partition(|d| !ctx.is_preemption(d.tid));
                if !preemptive.is_empty() {
                    if self.iteration < bound {
                        let parent = self.path_node(ctx.step);
                        for (rank, d) in preemptive.into_iter().enumerate() {
                            let node = self.arena.push(parent, (d, ((rank as u32) << 1) | 1));
                            self.defer(node, exp);
                        }
                    } else {
                        self.pruned += preemptive.len() as u64;
                        self.note_bound_pruned();
                    }
                }
                free
            }
        };
        let first = alts.first().copied();
        self.frames.push(Frame {
            alts,
            next: 1,
            node: NIL,
            exp,
            donated: false,
        });
        first
    }
}

/// The order key of the executions below a path with these marks, without
/// the terminating 0 (see [`Standing::order_key`] of [`Dfs`]): every
/// execution of the subtree below it explored in the same iteration has a
/// key starting with it.
fn key_of(marks: impl Iterator<Item = u32> + Clone) -> Vec<u32> {
    let (n, k) = marks.clone().fold((0, 0), |(n, k), m| (n + 1, k + (m & 1)));
    // Exactly sized, with room for `order_key`'s terminating 0: the pool
    // of `check --jobs` holds a key per stretch and per waiting subtree,
    // and keys grown by doubling took a quarter of its peak memory
    // (massif, `condvar_pc` under bound 3 on two threads).
    let mut key = Vec::with_capacity(2 + n + k as usize);
    key.push(k);
    for m in marks {
        if m & 1 == 1 {
            key.push(0);
            key.push(m >> 1);
        } else {
            key.push((m >> 1) + 1);
        }
    }
    key
}

impl Strategy for Dfs {
    fn name(&self) -> &str {
        "dfs"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.exhausted || self.left || !self.log_next() {
            return None;
        }
        self.resuming = false;
        if !self.started {
            self.started = true;
            if self.pool.is_none() {
                return Some(Start::Fresh);
            }
        }
        if let Some(pool) = self.pool.clone() {
            self.share_work(&pool);
        }
        // Backtrack to the deepest frame with an untried alternative.
        while let Some(f) = self.frames.last_mut() {
            if f.node != NIL {
                let node = f.node;
                f.node = NIL;
                self.arena.release(node);
            }
            if f.next < f.alts.len() {
                self.resuming = true;
                if std::mem::take(&mut self.jumped) {
                    self.stretch += 1;
                }
                let prefix_len = self.forced.len() + self.frames.len() - 1;
                // Keep `path` equal to the explorer's decisions even if this
                // execution were to end before its first `decide`.
                self.path.truncate(prefix_len);
                return Some(Start::Resume { prefix_len });
            }
            self.pop_frame();
        }
        if let Some(start) = self.next_subtree() {
            return Some(start);
        }
        match self.pool.clone() {
            Some(pool) => self.take_subtree(&pool),
            None => {
                self.exhausted = true;
                None
            }
        }
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let depth = ctx.step;
        let base = self.forced.len();
        let (d, mark) = if depth < base {
            let d = self.forced[depth];
            (d, self.mark(ctx, d))
        } else if self.resuming && self.frames.len() == depth - base + 1 {
            self.resuming = false;
            let f = self.frames.last_mut()?;
            f.next += 1;
            (f.chosen(), (f.next as u32 - 1) << 1)
        } else {
            self.resuming = false;
            while self.frames.len() > depth - base {
                self.pop_frame();
            }
            let mut exp = self.leaf();
            if let (Some(hash), true) = (self.hash.take(), self.cache.is_some()) {
                let key = self.cache_key(hash, ctx);
                match self.visit(key, depth) {
                    Some(made) => exp = made,
                    None => {
                        // Explored from an earlier visit: prune the subtree
                        // (or the shared cache is full: the run ends).
                        self.path.truncate(depth);
                        return None;
                    }
                }
            }
            (self.push_frame(ctx, exp)?, 0)
        };
        let valid = ctx
            .thread(d.tid)
            .is_some_and(|t| t.pending.enabled && d.alt < t.pending.alts);
        if !valid {
            // The same decisions no longer lead to the same state: skip
            // this branch rather than feed the explorer an invalid decision.
            self.nondeterministic += 1;
            self.path.truncate(depth);
            return None;
        }
        self.path.truncate(depth);
        self.path.push(d);
        self.marks.truncate(depth);
        self.marks.push(mark);
        Some(d)
    }

    /// By prefix, or by sharing the tree with other workers
    /// (`explorer/steal/`); not with a state cache, which hashes states.
    fn profile(&self) -> Profile {
        Profile {
            // A state cache prunes a subtree because another one reached
            // the same state: subtrees are no longer independent, and only
            // workers sharing the cache can split the tree.
            split: match self.cache {
                None => Split::ByPrefix,
                Some(_) => Split::Shared,
            },
            hashes_states: self.cache.is_some(),
            ..Profile::default()
        }
    }

    /// Exhaustion, the preemption bound, the state cache's counters, and
    /// the execution's place in the search (its key, its stretch, and as
    /// the pool logs it).
    fn standing(&self) -> Standing<'_> {
        Standing {
            exhausted: self.exhausted,
            bound_hit: self.bound_hit(),
            bound_prunes: Some(self.pruned),
            stats: self.stats(),
            order_key: Some(self.order_key()),
            stretch: self.stretch,
            logged: self.logged(),
            ..Standing::default()
        }
    }

    fn observe_state(&mut self, hash: Option<[u8; 32]>) {
        self.hash = hash;
    }

    fn splitting(&mut self) -> Option<&mut dyn Splitting> {
        Some(self)
    }
}

/// What [`Standing`] reads.
impl Dfs {
    fn stats(&self) -> Vec<Stat> {
        match &self.cache {
            None => Vec::new(),
            Some(c) => vec![
                Stat::new(crate::state_cache::STATES_EXPLORED, self.cache_states),
                Stat::new(crate::state_cache::CACHE_HITS, self.cache_hits),
                Stat::new(crate::state_cache::CACHE_EVICTIONS, c.evictions()),
            ],
        }
    }

    fn bound_hit(&self) -> Option<BoundHit> {
        let bound = self.opts.preemption_bound?;
        (self.pruned > 0).then_some(BoundHit {
            bound: "preemptions",
            value: u64::from(bound),
            knob: "--preemption-bound",
        })
    }

    /// `(k, seg0, r1, seg1, ..., rk, segk)` flattened (see the module
    /// documentation): `k`, then each non-preemptive rank plus one, and
    /// before each preemption's rank (and at the end) a 0 that ends the
    /// segment, so that a segment that is a prefix of another compares
    /// smaller.
    pub(crate) fn order_key(&self) -> Vec<u32> {
        let marks = &self.marks[..self.path.len().min(self.marks.len())];
        let mut key = key_of(marks.iter().copied());
        key.push(0);
        key
    }

    fn logged(&self) -> Option<Logged> {
        let shared = self.shared.as_ref()?;
        Some(Logged {
            leaf: self.leaf(),
            ..shared.logged
        })
    }
}

/// Shares the tree with other workers through a pool (`explorer/steal/`).
impl Splitting for Dfs {
    fn take_role(&mut self, role: Role) -> bool {
        let Role::Shared(pool) = role else {
            return false;
        };
        if self.started {
            return false;
        }
        if self.cache.is_some() {
            self.shared = Some(shared_cache::SharedCache::new(pool.visits(self.cache_mb)));
        }
        self.pool = Some(pool);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Pending, ThreadView};
    use wasmrace_trace::Tid;

    fn view(tid: u64, enabled: bool, alts: u32) -> ThreadView {
        ThreadView {
            tid: Tid(tid),
            pending: Pending {
                op: OpKind::CellSet,
                enabled,
                alts,
                accesses: vec![],
                site: 0,
            },
        }
    }

    fn ctx<'a>(step: usize, threads: &'a [ThreadView], last: Option<(u64, OpKind)>) -> Context<'a> {
        Context {
            step,
            threads,
            hidden: 0,
            last: last.map(|(t, op)| (Tid(t), Some(op))),
            prefix: &[],
        }
    }

    fn d(t: u64, alt: u32) -> Decision {
        Decision::new(Tid(t), alt)
    }

    #[test]
    fn arena_shares_prefixes_and_frees_what_nothing_holds() {
        let mut a = PrefixTree::<Decision>::default();
        let x = a.push(NIL, d(1, 0));
        let y = a.push(x, d(2, 0));
        let z = a.push(y, d(3, 1));
        let w = a.push(x, d(4, 0));
        assert_eq!(a.prefix(z), vec![d(1, 0), d(2, 0), d(3, 1)]);
        assert_eq!(a.prefix(w), vec![d(1, 0), d(4, 0)]);
        assert_eq!(a.prefix(NIL), vec![]);
        a.release(x);
        a.release(y);
        assert_eq!(a.live, 4, "children keep their ancestors");
        a.release(z);
        assert_eq!(a.live, 2, "z and then y freed");
        a.release(w);
        assert_eq!(a.live, 0);
        // Freed slots are reused.
        let v = a.push(NIL, d(9, 0));
        assert!(v < 4);
        assert_eq!(a.nodes.len(), 4);
    }

    #[test]
    fn order_continues_the_last_thread_unless_it_yielded() {
        let ts = [
            view(1, true, 1),
            view(2, true, 2),
            view(3, false, 1),
            view(4, true, 1),
        ];
        assert_eq!(
            Dfs::ordered(&ctx(0, &ts, None)),
            vec![d(1, 0), d(2, 0), d(2, 1), d(4, 0)]
        );
        assert_eq!(
            Dfs::ordered(&ctx(1, &ts, Some((2, OpKind::CellSet)))),
            vec![d(2, 0), d(2, 1), d(1, 0), d(4, 0)]
        );
        assert_eq!(
            Dfs::ordered(&ctx(1, &ts, Some((2, OpKind::Yield)))),
            vec![d(1, 0), d(4, 0), d(2, 0), d(2, 1)]
        );
        // A blocked or exited last thread: creation order.
        assert_eq!(
            Dfs::ordered(&ctx(1, &ts, Some((3, OpKind::CellSet)))),
            vec![d(1, 0), d(2, 0), d(2, 1), d(4, 0)]
        );
        assert_eq!(Dfs::ordered(&ctx(1, &ts, Some((9, OpKind::Exit)))).len(), 4);
    }

    /// Two always-enabled threads, two steps: schedules 11, 12, 21, 22.
    #[test]
    fn unbounded_search_by_hand() {
        let ts = [view(1, true, 1), view(2, true, 1)];
        let mut s = Dfs::unbounded();
        let mut seen = Vec::new();
        let mut starts = Vec::new();
        let mut path: Vec<Decision> = Vec::new();
        while let Some(start) = s.begin(0) {
            assert!(!s.standing().exhausted);
            starts.push(start);
            let from = match start {
                Start::Fresh => 0,
                Start::Resume { prefix_len } => prefix_len,
                Start::Saved { .. } => unreachable!("never saves"),
            };
            path.truncate(from);
            for step in from..2 {
                let last = path.last().map(|d| (d.tid.0, OpKind::CellSet));
                path.push(s.decide(&ctx(step, &ts, last)).unwrap());
            }
            seen.push(path.iter().map(|d| d.tid.0).collect::<Vec<_>>());
        }
        assert_eq!(seen, vec![vec![1, 1], vec![1, 2], vec![2, 2], vec![2, 1]]);
        assert_eq!(
            starts,
            vec![
                Start::Fresh,
                Start::Resume { prefix_len: 1 },
                Start::Resume { prefix_len: 0 },
                Start::Resume { prefix_len: 1 }
            ]
        );
        assert!(s.standing().exhausted);
        assert_eq!(s.begin(0), None);
        assert_eq!(s.bound_hit(), None);
    }

    /// Drives `s` over a program of `steps` steps whose thread views never
    /// change, as the explorer would; returns each explored schedule's
    /// threads and the preemptions DFS counted for it.
    fn drive(s: &mut Dfs, ts: &[ThreadView], steps: usize) -> Vec<(Vec<u64>, u32)> {
        let mut seen = Vec::new();
        let mut path: Vec<Decision> = Vec::new();
        while let Some(start) = s.begin(0) {
            let from = match start {
                Start::Fresh => 0,
                Start::Resume { prefix_len } => prefix_len,
                Start::Saved { .. } => unreachable!("never saves"),
            };
            path.truncate(from);
            for step in from..steps {
                let last = path.last().map(|d| (d.tid.0, OpKind::CellSet));
                path.push(s.decide(&ctx(step, ts, last)).unwrap());
            }
            seen.push((
                path.iter().map(|d| d.tid.0).collect(),
                s.current_preemptions(),
            ));
        }
        seen
    }

    #[test]
    fn bound_zero_prunes_preemptions_and_says_so() {
        let ts = [view(1, true, 1), view(2, true, 1)];
        let mut s = Dfs::with_preemption_bound(0);
        let seen: Vec<Vec<u64>> = drive(&mut s, &ts, 2).into_iter().map(|(p, _)| p).collect();
        assert_eq!(seen, vec![vec![1, 1], vec![2, 2]]);
        assert_eq!(s.pruned(), 2);
        assert_eq!(
            s.bound_hit(),
            Some(BoundHit {
                bound: "preemptions",
                value: 0,
                knob: "--preemption-bound"
            })
        );
        assert_eq!(s.stored_prefix_nodes(), 0);
    }

    #[test]
    fn bound_one_defers_preemptions_to_the_next_iteration() {
        let ts = [view(1, true, 1), view(2, true, 1)];
        let mut s = Dfs::with_preemption_bound(1);
        let seen = drive(&mut s, &ts, 2);
        assert_eq!(
            seen,
            vec![
                (vec![1, 1], 0),
                (vec![2, 2], 0),
                (vec![1, 2], 1),
                (vec![2, 1], 1)
            ]
        );
        assert_eq!((s.deferred(), s.pruned()), (2, 0));
        assert_eq!(s.bound_hit(), None);
        assert_eq!(s.stored_prefix_nodes(), 0);
    }

    #[test]
    fn a_resumed_decision_that_is_no_longer_enabled_abandons_the_branch() {
        let both = [view(1, true, 1), view(2, true, 1)];
        let mut s = Dfs::unbounded();
        assert_eq!(s.begin(0), Some(Start::Fresh));
        assert_eq!(s.decide(&ctx(0, &both, None)), Some(d(1, 0)));
        assert_eq!(s.begin(0), Some(Start::Resume { prefix_len: 0 }));
        // Thread 2 was enabled at step 0 last time; now it is not.
        let only_one = [view(1, true, 1), view(2, false, 1)];
        assert_eq!(s.decide(&ctx(0, &only_one, None)), None);
        assert_eq!(s.nondeterministic(), 1);
        assert_eq!(s.begin(0), None);
    }
}
