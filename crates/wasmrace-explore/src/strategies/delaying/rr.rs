//! The round-robin delaying explorer, RR (Desai, Qadeer & Seshia, FSE 2015,
//! §2 "Example" and §5.3): a queue of threads in creation order. `next` is
//! the head; `step` appends a new thread at the tail, removes an exited one
//! and moves a thread that has just blocked to the tail; `delay` moves the
//! head to the tail. So the head runs until it blocks, exits or is delayed
//! ("it moves to the next task in the list only on a delay or when the
//! current task is completed").
//!
//! The queue keeps every live thread, blocked ones included; a thread can
//! also be disabled without having blocked itself (another thread took the
//! lock it is about to take), so `next` is the first *enabled* thread of the
//! queue and `delay` moves that one to the tail. With `k` enabled threads,
//! `k - 1` delays bring each of them to the front once: RR is sound.

use super::explorer::{first_enabled, DelayingExplorer};
use crate::program::{StepInfo, ThreadView};
use std::collections::VecDeque;
use wasmrace_trace::Tid;

/// RR: a queue of threads in creation order; a delay moves the head to the
/// tail (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    queue: VecDeque<Tid>,
}

impl RoundRobin {
    /// An empty queue; threads join as the cursor announces them.
    pub fn new() -> Self {
        RoundRobin::default()
    }

    /// The queue, head first.
    pub fn queue(&self) -> impl Iterator<Item = Tid> + '_ {
        self.queue.iter().copied()
    }

    /// Inserts a new thread at `pos` (clamped to the tail); PRR's `start`.
    pub(crate) fn insert_at(&mut self, pos: usize, t: Tid) {
        if !self.queue.contains(&t) {
            self.queue.insert(pos.min(self.queue.len()), t);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    fn move_to_tail(&mut self, t: Tid) {
        if let Some(i) = self.queue.iter().position(|q| *q == t) {
            self.queue.remove(i);
            self.queue.push_back(t);
        }
    }
}

impl DelayingExplorer for RoundRobin {
    fn name(&self) -> &str {
        "rr"
    }

    fn start(&mut self, thread: Tid) {
        self.insert_at(usize::MAX, thread);
    }

    fn finish(&mut self, thread: Tid) {
        self.queue.retain(|t| *t != thread);
    }

    /// A thread whose own step left it disabled has blocked: to the tail.
    fn step(&mut self, event: &StepInfo, threads: &[ThreadView]) {
        let blocked = threads
            .iter()
            .any(|v| v.tid == event.tid && !v.pending.enabled);
        if blocked {
            self.move_to_tail(event.tid);
        }
    }

    fn next(&self, threads: &[ThreadView]) -> Tid {
        first_enabled(&self.queue, threads)
    }

    fn delay(&mut self, threads: &[ThreadView]) {
        let head = self.next(threads);
        self.move_to_tail(head);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::delaying::{delay_cycle, is_sound_at, views, DelayCursor};
    use wasmrace_trace::{Decision, OpKind};

    fn tids(rr: &RoundRobin) -> Vec<u64> {
        rr.queue().map(|t| t.0).collect()
    }

    #[test]
    fn creation_order_head_runs_until_it_blocks() {
        let mut rr = RoundRobin::new();
        for t in [1, 2, 3] {
            rr.start(Tid(t));
        }
        let all = views(&[(1, true, 1), (2, true, 1), (3, true, 1)]);
        assert_eq!(rr.next(&all), Tid(1));
        // Thread 1 steps and stays enabled: still the head.
        let step1 = StepInfo {
            tid: Tid(1),
            op: Some(OpKind::CellSet),
            ..StepInfo::default()
        };
        rr.step(&step1, &all);
        assert_eq!(rr.next(&all), Tid(1));
        // Thread 1 steps onto a receive with an empty mailbox: it blocked.
        let blocked = views(&[(1, false, 1), (2, true, 1), (3, true, 1)]);
        rr.step(&step1, &blocked);
        assert_eq!(tids(&rr), vec![2, 3, 1]);
        assert_eq!(rr.next(&blocked), Tid(2));
        rr.finish(Tid(2));
        assert_eq!(tids(&rr), vec![3, 1]);
    }

    #[test]
    fn delays_cycle_through_the_enabled_threads_in_queue_order() {
        let ts = views(&[(1, true, 1), (2, false, 1), (3, true, 1), (4, true, 1)]);
        let c = DelayCursor::new(RoundRobin::new(), &ts);
        let order: Vec<u64> = delay_cycle(&c, &ts).iter().map(|d| d.tid.0).collect();
        assert_eq!(order, vec![1, 3, 4]);
        assert!(is_sound_at(&c, &ts));
        // After a full cycle the order is back where it started.
        let mut c2 = c.clone();
        for _ in 0..3 {
            c2.delay(&ts);
        }
        assert_eq!(c2.next(&ts), Decision::new(Tid(1), 0));
        assert_eq!(tids(c2.explorer()), vec![2, 1, 3, 4]);
    }

    #[test]
    fn a_thread_disabled_by_someone_else_is_skipped_not_moved() {
        let mut rr = RoundRobin::new();
        for t in [1, 2] {
            rr.start(Tid(t));
        }
        let ts = views(&[(1, false, 1), (2, true, 1)]);
        assert_eq!(rr.next(&ts), Tid(2));
        rr.delay(&ts);
        assert_eq!(tids(&rr), vec![1, 2]);
        assert!(is_sound_at(&DelayCursor::new(rr, &ts), &ts));
    }
}
