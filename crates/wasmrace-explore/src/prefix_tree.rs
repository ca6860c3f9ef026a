//! A prefix tree of decisions with reference-counted nodes and a free list:
//! many stored prefixes of one exploration share their common beginnings, so
//! storing a prefix costs one node per decision not already stored. DFS keeps
//! its deferred preemptive alternatives in one; the explorer keeps the
//! prefixes of saved states (`Start::Saved`) in another.

/// Index of a node; [`NIL`] is the empty prefix.
pub(crate) type NodeId = u32;
pub(crate) const NIL: NodeId = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node<T> {
    pub(crate) parent: NodeId,
    pub(crate) item: T,
    pub(crate) depth: u32,
    /// Children nodes plus holders (whoever keeps the prefix).
    pub(crate) refs: u32,
}

/// See the module documentation. `T` is what one step of a prefix stores.
#[derive(Debug)]
pub(crate) struct PrefixTree<T> {
    pub(crate) nodes: Vec<Node<T>>,
    free: Vec<NodeId>,
    /// Nodes alive.
    pub(crate) live: usize,
}

impl<T> Default for PrefixTree<T> {
    fn default() -> Self {
        PrefixTree {
            nodes: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T: Copy> PrefixTree<T> {
    /// A new node `parent + item`, held once by the caller.
    pub(crate) fn push(&mut self, parent: NodeId, item: T) -> NodeId {
        let depth = if parent == NIL {
            1
        } else {
            self.nodes[parent as usize].depth + 1
        };
        if parent != NIL {
            self.nodes[parent as usize].refs += 1;
        }
        let node = Node {
            parent,
            item,
            depth,
            refs: 1,
        };
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() as NodeId - 1
            }
        }
    }

    /// One more hold on `id` (nothing for `NIL`).
    pub(crate) fn hold(&mut self, id: NodeId) {
        if id != NIL {
            self.nodes[id as usize].refs += 1;
        }
    }

    /// Drops one hold on `id`, freeing it and then its ancestors that nothing
    /// else holds.
    pub(crate) fn release(&mut self, mut id: NodeId) {
        while id != NIL {
            let n = &mut self.nodes[id as usize];
            n.refs -= 1;
            if n.refs > 0 {
                return;
            }
            let parent = n.parent;
            self.free.push(id);
            self.live -= 1;
            id = parent;
        }
    }

    /// The nodes from the root to `id`, `id` last.
    pub(crate) fn chain(&self, mut id: NodeId) -> Vec<NodeId> {
        let mut out = Vec::with_capacity(self.depth(id));
        while id != NIL {
            out.push(id);
            id = self.nodes[id as usize].parent;
        }
        out.reverse();
        out
    }

    /// Number of items from the root to `id`.
    pub(crate) fn depth(&self, id: NodeId) -> usize {
        if id == NIL {
            0
        } else {
            self.nodes[id as usize].depth as usize
        }
    }

    /// The items from the root to `id`.
    pub(crate) fn prefix(&self, mut id: NodeId) -> Vec<T> {
        let len = self.depth(id);
        let mut out = Vec::with_capacity(len);
        while id != NIL {
            let n = &self.nodes[id as usize];
            out.push(n.item);
            id = n.parent;
        }
        out.reverse();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_share_nodes_and_holds_keep_them() {
        let mut t: PrefixTree<u8> = PrefixTree::default();
        let a = t.push(NIL, 1);
        let b = t.push(a, 2);
        let c = t.push(a, 3);
        assert_eq!(
            (t.prefix(b), t.prefix(c), t.depth(c)),
            (vec![1, 2], vec![1, 3], 2)
        );
        assert_eq!(t.chain(c), vec![a, c]);
        t.hold(b);
        t.release(a);
        t.release(b);
        assert_eq!(t.live, 3, "b is still held once, and b and c hold a");
        t.release(c);
        assert_eq!(t.live, 2);
        t.release(b);
        assert_eq!(t.live, 0);
        assert_eq!(t.prefix(NIL), Vec::<u8>::new());
    }
}
