//! The states saved at a strategy's request (`Strategy::save_request`,
//! SES's frontier): their prefixes share a prefix tree of (decision,
//! operation, hash of the state it was taken at) nodes, and each keeps a
//! snapshot while the count and byte budgets allow, else only its prefix.
//! The hashes go with the prefix so that an execution started from a
//! saved state knows the states before it: a cycle back to one of them
//! is a livelock like a cycle on its own steps (without them, SES on
//! one thread exhausted a polite-backoff livelock with no bug).

use super::fairness::FairState;
use super::path::{PathSnapshots, PathStep};
use super::{Config, Report};
use crate::prefix_tree::{NodeId, PrefixTree, NIL};
use crate::program::Program;
use std::collections::BTreeMap;

/// A state saved at a strategy's request: its prefix (a held node of the
/// tree) and, when one was kept, its snapshot.
struct Saved<S> {
    node: NodeId,
    snapshot: Option<S>,
    /// `Program::snapshot_bytes` of the snapshot (0 without one).
    bytes: usize,
    /// Fair scheduling's state there.
    fair: FairState,
}

/// One step of a saved prefix: the decision and operation, and the hash
/// of the state it was taken at (`None` where none was computed).
type SavedStep = (PathStep, Option<[u8; 32]>);

/// A saved state taken out of the store to start from.
pub(crate) struct Taken<S> {
    /// The decisions (and operations) that lead to it.
    pub(crate) prefix: Vec<PathStep>,
    /// `hashes[i]`: the hash of the state after the first `i` of them, where
    /// one was computed.
    pub(crate) hashes: Vec<Option<[u8; 32]>>,
    pub(crate) snapshot: Option<S>,
    /// Fair scheduling's state there.
    pub(crate) fair: FairState,
    node: NodeId,
}

/// See the module documentation.
pub(crate) struct SavedStates<S> {
    tree: PrefixTree<SavedStep>,
    /// `path_nodes[i]` is the node of the current path's first `i + 1`
    /// decisions, interned only when a save needs it and held once by the
    /// path.
    path_nodes: Vec<NodeId>,
    states: BTreeMap<u64, Saved<S>>,
    /// Saved states holding a snapshot, and their bytes.
    snapshots: usize,
    bytes: usize,
    max_snapshots: usize,
    max_bytes: usize,
}

impl<S> SavedStates<S> {
    pub(crate) fn new(config: &Config) -> Self {
        SavedStates {
            tree: PrefixTree::default(),
            path_nodes: Vec::new(),
            states: BTreeMap::new(),
            snapshots: 0,
            bytes: 0,
            max_snapshots: config.max_saved_snapshots,
            max_bytes: config.max_saved_bytes,
        }
    }

    /// The current path was cut to its first `len` decisions: drops the
    /// path's holds on the nodes beyond (deepest first).
    pub(crate) fn truncate_path(&mut self, len: usize) {
        while self.path_nodes.len() > len {
            if let Some(n) = self.path_nodes.pop() {
                self.tree.release(n);
            }
        }
    }

    /// Saves the state the program is in (reached by `path`, with the
    /// hashes of the states along it) as `id`, replacing a state saved
    /// under the same id.
    pub(crate) fn save<P>(
        &mut self,
        id: u64,
        program: &mut P,
        (path, hashes): (&PathSnapshots<S>, &[Option<[u8; 32]>]),
        fair: &FairState,
        report: &mut Report,
    ) -> Result<(), P::Error>
    where
        P: Program<Snapshot = S>,
    {
        self.intern_path(path, hashes);
        let node = self.path_nodes.last().copied().unwrap_or(NIL);
        self.tree.hold(node);
        // The byte budget is checked before the snapshot is taken (its size
        // is known only after), so it can be passed by one snapshot;
        // checking after would take and drop a snapshot at every save once
        // the budget is full.
        let room = self.snapshots < self.max_snapshots && self.bytes < self.max_bytes;
        let snapshot = if room { program.snapshot()? } else { None };
        let bytes = snapshot.as_ref().map_or(0, |s| program.snapshot_bytes(s));
        if snapshot.is_some() {
            self.snapshots += 1;
            self.bytes += bytes;
            report.saved_with_snapshot += 1;
        } else {
            report.saved_as_prefix += 1;
        }
        let state = Saved {
            node,
            snapshot,
            bytes,
            fair: fair.clone(),
        };
        if let Some(old) = self.states.insert(id, state) {
            self.tree.release(old.node);
            self.snapshots -= usize::from(old.snapshot.is_some());
            self.bytes -= old.bytes;
        }
        Ok(())
    }

    /// Interns the current path's decisions into the tree, extending
    /// `path_nodes` (each new node held once by the path).
    fn intern_path(&mut self, path: &PathSnapshots<S>, hashes: &[Option<[u8; 32]>]) {
        let (decisions, ops) = (path.decisions(), path.ops());
        while self.path_nodes.len() < decisions.len() {
            let i = self.path_nodes.len();
            let parent = self.path_nodes.last().copied().unwrap_or(NIL);
            let hash = hashes.get(i).copied().flatten();
            let node = self.tree.push(parent, ((decisions[i], ops[i]), hash));
            self.path_nodes.push(node);
        }
    }

    /// Takes the state saved as `id` out of the store (starting from a saved
    /// state uses it up), or `None` if there is none.
    pub(crate) fn take(&mut self, id: u64) -> Option<Taken<S>> {
        let state = self.states.remove(&id)?;
        if state.snapshot.is_some() {
            self.snapshots -= 1;
            self.bytes -= state.bytes;
        }
        let (prefix, hashes) = self.tree.prefix(state.node).into_iter().unzip();
        Some(Taken {
            prefix,
            hashes,
            snapshot: state.snapshot,
            fair: state.fair,
            node: state.node,
        })
    }

    /// The path now is `taken`'s prefix: holds its nodes, then drops the
    /// saved state's own hold.
    pub(crate) fn adopt_path(&mut self, taken: &Taken<S>) {
        self.truncate_path(0);
        self.path_nodes = self.tree.chain(taken.node);
        for &n in &self.path_nodes {
            self.tree.hold(n);
        }
        self.tree.release(taken.node);
    }
}
