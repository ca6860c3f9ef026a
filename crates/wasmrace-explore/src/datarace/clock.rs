//! Vector clocks, one entry per thread (by the thread's index in its
//! execution, in spawn order), as happens-before detectors keep them.

/// A vector clock: `self[t]` is how many of thread `t`'s epochs are known
/// to have happened before; missing entries are 0.
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct VClock(Vec<u32>);

// By hand for `clone_from`, which keeps the buffer: a restore copies every
// thread's clock into the execution's, and the derived one allocated each.
impl Clone for VClock {
    fn clone(&self) -> Self {
        VClock(self.0.clone())
    }

    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl VClock {
    /// Thread `t`'s entry.
    #[inline]
    pub fn get(&self, t: usize) -> u32 {
        self.0.get(t).copied().unwrap_or(0)
    }

    /// Sets thread `t`'s entry.
    pub fn set(&mut self, t: usize, v: u32) {
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] = v;
    }

    /// Raises every entry to `other`'s where it is higher.
    pub fn join(&mut self, other: &VClock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a = (*a).max(*b);
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_takes_the_larger_entry_and_grows() {
        let mut a = VClock::default();
        a.set(0, 3);
        let mut b = VClock::default();
        b.set(0, 1);
        b.set(2, 5);
        a.join(&b);
        assert_eq!((a.get(0), a.get(1), a.get(2), a.get(9)), (3, 0, 5, 0));
    }
}
