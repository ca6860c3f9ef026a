//! The run-to-completion delaying explorer, RTC (Desai, Qadeer & Seshia,
//! FSE 2015, §5.3, after the P testing work): "follow the causal sequence of
//! events, giving priority to the receiver of the most recently sent event;
//! when a delay is applied, the highest priority process is moved to the
//! lowest priority position".
//!
//! A priority list, highest first. New threads join at the lowest priority
//! (creation order, as in RR); exited threads leave; a send moves its
//! receiver to the top, so a message is handled as soon as it is sent and
//! the handler's own sends are followed in turn, depth first. When the
//! receiver blocks again (its mailbox is empty), the next enabled thread in
//! the list, typically the sender, continues: a blocked thread keeps its
//! place. `next` is the first enabled thread, `delay` moves it to the
//! bottom: with `k` enabled threads, `k - 1` delays reach each of them, so
//! RTC is sound. Even with few delays it reaches deep states, since it
//! follows chains of messages.

use super::explorer::{first_enabled, send_target, DelayingExplorer};
use crate::program::{StepInfo, ThreadView};
use std::collections::VecDeque;
use wasmrace_trace::Tid;

/// RTC: follows messages to their receivers; a delay moves the first
/// enabled thread to the lowest priority (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct RunToCompletion {
    order: VecDeque<Tid>,
}

impl RunToCompletion {
    /// An empty priority list; threads join as the cursor announces them.
    pub fn new() -> Self {
        RunToCompletion::default()
    }

    /// The priority list, highest first.
    pub fn order(&self) -> impl Iterator<Item = Tid> + '_ {
        self.order.iter().copied()
    }

    fn remove(&mut self, t: Tid) -> bool {
        match self.order.iter().position(|q| *q == t) {
            Some(i) => {
                self.order.remove(i);
                true
            }
            None => false,
        }
    }
}

impl DelayingExplorer for RunToCompletion {
    fn name(&self) -> &str {
        "rtc"
    }

    fn start(&mut self, thread: Tid) {
        if !self.order.contains(&thread) {
            self.order.push_back(thread);
        }
    }

    fn finish(&mut self, thread: Tid) {
        self.remove(thread);
    }

    fn step(&mut self, event: &StepInfo, _threads: &[ThreadView]) {
        if let Some(to) = send_target(event, self.order.iter().copied()) {
            self.remove(to);
            self.order.push_front(to);
        }
    }

    fn next(&self, threads: &[ThreadView]) -> Tid {
        first_enabled(&self.order, threads)
    }

    fn delay(&mut self, threads: &[ThreadView]) {
        let head = self.next(threads);
        if self.remove(head) {
            self.order.push_back(head);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::delaying::{delay_cycle, is_sound_at, views, DelayCursor};
    use wasmrace_trace::{Access, Oid, OpKind};

    fn order(e: &RunToCompletion) -> Vec<u64> {
        e.order().map(|t| t.0).collect()
    }

    fn send(from: u64, to: u64) -> StepInfo {
        StepInfo {
            tid: Tid(from),
            op: Some(OpKind::Send),
            accesses: vec![Access::write(Oid::mailbox(Tid(to)))],
            message: Some((Tid(from), 0)),
            ..StepInfo::default()
        }
    }

    #[test]
    fn the_receiver_of_the_latest_send_goes_first_and_blocked_threads_keep_their_place() {
        let mut e = RunToCompletion::new();
        for t in [1, 2, 3] {
            e.start(Tid(t));
        }
        let all = views(&[(1, true, 1), (2, true, 1), (3, true, 1)]);
        e.step(&send(1, 3), &all);
        assert_eq!(order(&e), vec![3, 1, 2]);
        assert_eq!(e.next(&all), Tid(3));
        e.step(&send(3, 2), &all);
        assert_eq!(order(&e), vec![2, 3, 1]);
        // 2 handles the message and blocks on its empty mailbox: 3, which
        // sent it, continues.
        let two_blocked = views(&[(1, true, 1), (2, false, 1), (3, true, 1)]);
        e.step(
            &StepInfo {
                tid: Tid(2),
                op: Some(OpKind::Recv),
                ..StepInfo::default()
            },
            &two_blocked,
        );
        assert_eq!(order(&e), vec![2, 3, 1]);
        assert_eq!(e.next(&two_blocked), Tid(3));
        // A delay moves the first enabled thread to the bottom.
        e.delay(&two_blocked);
        assert_eq!(order(&e), vec![2, 1, 3]);
        assert_eq!(e.next(&two_blocked), Tid(1));
        // A send to a thread that already exited changes nothing.
        e.finish(Tid(2));
        e.step(&send(1, 2), &two_blocked);
        assert_eq!(order(&e), vec![1, 3]);
    }

    #[test]
    fn delays_cycle_through_every_enabled_decision() {
        let ts = views(&[(1, true, 1), (2, true, 2), (3, false, 1), (4, true, 1)]);
        let mut c = DelayCursor::new(RunToCompletion::new(), &ts);
        c.after_step(&send(1, 4), &ts);
        let cycle: Vec<(u64, u32)> = delay_cycle(&c, &ts)
            .iter()
            .map(|d| (d.tid.0, d.alt))
            .collect();
        assert_eq!(cycle, vec![(4, 0), (1, 0), (2, 0), (2, 1)]);
        assert!(is_sound_at(&c, &ts));
    }
}
