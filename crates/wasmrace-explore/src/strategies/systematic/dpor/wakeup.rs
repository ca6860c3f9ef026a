//! Wakeup trees (Abdulla et al., JACM 2017, §6): the sequences optimal DPOR
//! still has to explore from one state, ordered, sharing prefixes, and the
//! two questions both algorithms ask of a sequence `w` from that state:
//! its initials `I(w)` (threads whose first event in `w` nothing in `w`
//! happens before) and weak initials `WI(w)` (those, and threads absent
//! from `w` whose next event commutes with all of `w`).

use super::race::{dependent, Ev};

/// Where `ev` comes first in `w`, if `ev`'s thread is a weak initial of
/// it: `Some(Some(i))` when `ev` is the initial `w[i]`, `Some(None)` when
/// `ev`'s thread is absent from `w` and `ev` commutes with all of it;
/// `None` when `ev` cannot come first. `w` is given as (index, event) with
/// the events already matched left out. With `any_alt`, any alternative of
/// `ev`'s thread counts as `ev` (a sleeping thread sleeps with all its
/// alternatives).
fn initial_at<'e>(
    ev: &Ev,
    w: impl IntoIterator<Item = (usize, &'e Ev)>,
    any_alt: bool,
) -> Option<Option<usize>> {
    for (i, x) in w {
        if x.tid == ev.tid {
            return (any_alt || x.alt == ev.alt).then_some(Some(i));
        }
        if dependent(x, ev) {
            return None;
        }
    }
    Some(None)
}

/// What is left of `w` once `ev` runs first, if `ev`'s thread is a weak
/// initial of `w`: `w` without `ev` when `ev` is an initial of it, `w`
/// itself when `ev`'s thread is absent from `w` and `ev` commutes with all
/// of it. `None` when `ev` cannot come first.
#[cfg(test)]
pub(crate) fn after_initial<'e>(ev: &Ev, w: &[&'e Ev], any_alt: bool) -> Option<Vec<&'e Ev>> {
    let at = initial_at(ev, w.iter().copied().enumerate(), any_alt)?;
    let mut rest = w.to_vec();
    if let Some(i) = at {
        rest.remove(i);
    }
    Some(rest)
}

/// Whether `ev`'s thread is a weak initial of `w` (see [`initial_at`]).
pub(crate) fn is_weak_initial(ev: &Ev, w: &[&Ev], any_alt: bool) -> bool {
    initial_at(ev, w.iter().copied().enumerate(), any_alt).is_some()
}

/// The initials of `w`: the first event of each thread that no earlier
/// event of `w` happens before, in order.
pub(crate) fn initials<'e>(w: &[&'e Ev]) -> Vec<&'e Ev> {
    let mut out: Vec<&Ev> = Vec::new();
    for (i, &x) in w.iter().enumerate() {
        if w[..i].iter().any(|y| y.tid == x.tid) {
            continue;
        }
        if !w[..i].iter().any(|y| dependent(y, x)) {
            out.push(x);
        }
    }
    out
}

/// A sequence being inserted into a wakeup tree: references into the
/// execution, with the events matched on the way down marked, so that
/// going down a level copies nothing (a copy per level made an insertion
/// quadratic in the sequence's length, and readers(N)'s reversals are as
/// long as the execution).
struct Inserting<'w, 'e> {
    w: &'w [&'e Ev],
    matched: Vec<bool>,
    left: usize,
    /// The first event not matched: the walk down a tree mostly matches
    /// `w` in order, so the scans start here rather than at `w[0]`.
    first: usize,
}

impl<'e> Inserting<'_, 'e> {
    /// The events not matched yet, with their indices.
    fn rest(&self) -> impl Iterator<Item = (usize, &'e Ev)> + '_ {
        self.w[self.first..]
            .iter()
            .zip(&self.matched[self.first..])
            .enumerate()
            .filter(|(_, (_, &m))| !m)
            .map(|(i, (&x, _))| (self.first + i, x))
    }

    /// Marks `w[i]` matched.
    fn matched(&mut self, i: usize) {
        self.matched[i] = true;
        self.left -= 1;
        while self.first < self.w.len() && self.matched[self.first] {
            self.first += 1;
        }
    }
}

/// An ordered tree of events; the root stands for the state it belongs to,
/// and every leaf is a sequence to explore from there.
#[derive(Debug, Default)]
pub(crate) struct WakeupTree {
    children: Vec<(Ev, WakeupTree)>,
    /// Events in the tree, kept as it changes: the search asks for it
    /// after every insertion, and counting would cost the tree's size
    /// (which grows with the number of traces, e.g. 2^N on readers(N)).
    size: usize,
}

/// Dropped with a loop, not a recursion: a tree is as deep as an
/// execution is long, and the host's stack is not (a std guest's two
/// threads of 50,000 `fetch_add`s each overflowed it).
impl Drop for WakeupTree {
    fn drop(&mut self) {
        let mut stack: Vec<WakeupTree> = self.children.drain(..).map(|(_, t)| t).collect();
        while let Some(mut t) = stack.pop() {
            stack.extend(t.children.drain(..).map(|(_, s)| s));
        }
    }
}

impl WakeupTree {
    /// A tree holding only `w`.
    fn chain<'e>(w: impl DoubleEndedIterator<Item = &'e Ev>) -> WakeupTree {
        let mut tree = WakeupTree::default();
        for ev in w.rev() {
            let size = tree.size + 1;
            tree = WakeupTree {
                children: vec![(ev.clone(), tree)],
                size,
            };
        }
        tree
    }

    /// Whether nothing is left to explore.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// The first event's threads, in order.
    pub fn first_threads(&self) -> impl Iterator<Item = &Ev> {
        self.children.iter().map(|(ev, _)| ev)
    }

    /// Removes and returns the first child with its subtree.
    pub fn pop_first(&mut self) -> Option<(Ev, WakeupTree)> {
        let first = (!self.children.is_empty()).then(|| self.children.remove(0))?;
        self.size -= 1 + first.1.size;
        Some(first)
    }

    /// Removes and returns every child whose event is by `ev`'s thread.
    pub fn take_thread(&mut self, ev: &Ev) -> Vec<(Ev, WakeupTree)> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.children)
            .into_iter()
            .partition(|(e, _)| e.tid == ev.tid);
        self.children = rest;
        self.size -= mine.iter().map(|(_, sub)| 1 + sub.size).sum::<usize>();
        mine
    }

    /// Adds a single event as the last child (source-DPOR's backtrack set).
    pub fn push(&mut self, ev: Ev) {
        self.children.push((ev, WakeupTree::default()));
        self.size += 1;
    }

    /// `insert[E](w, wut)`: unless a leaf reached through weak initials
    /// already covers `w`, adds the rest of `w` as the last child of the
    /// deepest node it goes through. Returns whether the tree changed. The
    /// root of a non-empty tree is never a leaf: the tree stands for the
    /// unexplored children of a state whose current child is elsewhere.
    pub fn insert(&mut self, w: &[&Ev]) -> bool {
        let mut w = Inserting {
            w,
            matched: vec![false; w.len()],
            left: w.len(),
            first: 0,
        };
        self.insert_rest(&mut w) > 0
    }

    /// [`insert`](Self::insert) of what is left of `w`, returning the
    /// number of events added. A loop, not a recursion: a tree is as deep
    /// as an execution is long (a std guest's run to hundreds of thousands
    /// of steps), and the host's stack is not.
    fn insert_rest(&mut self, w: &mut Inserting<'_, '_>) -> usize {
        // Down through the children `w` goes through, to the deepest.
        let mut path = Vec::new();
        let mut node: &WakeupTree = self;
        'down: loop {
            for (k, (ev, sub)) in node.children.iter().enumerate() {
                let Some(at) = initial_at(ev, w.rest(), false) else {
                    continue;
                };
                // A leaf covers `w`; otherwise go down with the rest of it.
                if sub.children.is_empty() {
                    return 0;
                }
                if let Some(i) = at {
                    w.matched(i);
                }
                path.push(k);
                node = sub;
                continue 'down;
            }
            break;
        }
        let mut rest = w.rest().map(|(_, x)| x);
        let Some(first) = rest.next() else {
            return 0;
        };
        let rest: Vec<&Ev> = rest.collect();
        let added = w.left;
        let mut node: &mut WakeupTree = self;
        node.size += added;
        for k in path {
            node = &mut node.children[k].1;
            node.size += added;
        }
        node.children
            .push((first.clone(), WakeupTree::chain(rest.into_iter())));
        added
    }

    /// Events in the tree, for memory accounting.
    pub fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmrace_trace::{Access, Oid, OpKind, Tid};

    fn w(t: u64, x: u64) -> Ev {
        Ev::new(Tid(t), 0, Some(OpKind::CellSet), &[Access::write(Oid(x))])
    }

    #[test]
    fn initials_and_weak_initials() {
        // 1 writes x, 2 writes x, 3 writes y: initials 1 and 3.
        let events = [w(1, 10), w(2, 10), w(3, 11)];
        let seq: Vec<&Ev> = events.iter().collect();
        let got: Vec<u64> = initials(&seq).iter().map(|e| e.tid.0).collect();
        assert_eq!(got, vec![1, 3]);
        assert_eq!(after_initial(&w(3, 11), &seq, false).unwrap().len(), 2);
        assert!(after_initial(&w(2, 10), &seq, false).is_none());
        // Thread 4, absent and independent: a weak initial.
        assert_eq!(after_initial(&w(4, 12), &seq, false).unwrap().len(), 3);
        assert!(after_initial(&w(4, 10), &seq, false).is_none());
        for ev in [w(1, 10), w(2, 10), w(3, 11), w(4, 12), w(4, 10)] {
            assert_eq!(
                is_weak_initial(&ev, &seq, false),
                after_initial(&ev, &seq, false).is_some()
            );
        }
    }

    #[test]
    fn insert_shares_prefixes_and_skips_covered_sequences() {
        let mut t = WakeupTree::default();
        assert!(t.insert(&[&w(1, 10), &w(2, 10)]));
        // Covered: thread 3 commutes with the whole leaf 1.2.
        assert!(!t.insert(&[&w(3, 11)]));
        // Shares the first event, then branches (3 conflicts with 2).
        assert!(t.insert(&[&w(1, 10), &w(3, 10)]));
        assert_eq!(t.size(), 3);
        // A sequence a leaf extends: covered.
        assert!(!t.insert(&[&w(1, 10)]));
        assert_eq!(t.size(), counted(&t));
    }

    /// The events of `t`, counted.
    fn counted(t: &WakeupTree) -> usize {
        t.children.iter().map(|(_, s)| 1 + counted(s)).sum()
    }

    /// A tree as deep as a long execution (a std guest's run of 100,000
    /// steps overflowed the host's stack: the insertion and the drop
    /// recursed per level): inserted into and dropped on a test thread's
    /// 2 MiB stack.
    #[test]
    fn a_tree_as_deep_as_a_long_execution_needs_no_deep_stack() {
        let deep: Vec<Ev> = (0..200_000).map(|i| w(1, 1_000_000 + i)).collect();
        let mut t = WakeupTree::default();
        t.insert(&deep.iter().collect::<Vec<_>>());
        // The same path but for its last event, which another thread's
        // write of the same object replaces: a new leaf at the bottom.
        let mut longer: Vec<&Ev> = deep[..deep.len() - 1].iter().collect();
        let extra = w(2, 1_000_000 + 199_999);
        longer.push(&extra);
        assert!(t.insert(&longer));
        assert_eq!(t.size(), 200_001);
        drop(t);
    }

    #[test]
    fn the_kept_size_follows_every_change() {
        let mut t = WakeupTree::default();
        t.insert(&[&w(1, 10), &w(2, 10), &w(4, 12)]);
        t.insert(&[&w(1, 10), &w(3, 10), &w(2, 11)]);
        t.insert(&[&w(2, 10), &w(1, 10)]);
        t.push(w(5, 13));
        t.insert(&[&w(3, 11), &w(3, 12)]);
        assert_eq!(t.size(), counted(&t));
        assert_eq!(t.size(), 10);
        let mine = t.take_thread(&w(5, 99));
        assert_eq!(mine.len(), 1);
        assert_eq!(t.size(), counted(&t));
        let (_, sub) = t.pop_first().unwrap();
        assert_eq!(sub.size(), counted(&sub));
        assert_eq!(t.size(), counted(&t));
        while t.pop_first().is_some() {
            assert_eq!(t.size(), counted(&t));
        }
        assert_eq!(t.size(), 0);
    }
}
