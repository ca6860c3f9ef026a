//! The delaying-explorer interface (Desai, Qadeer & Seshia, "Systematic
//! Testing of Asynchronous Reactive Systems", FSE 2015, §2 and Fig. 6) and
//! the cursor that turns an explorer into decisions, `choose` alternatives
//! included.
//!
//! **Explorers.** A delaying explorer is a deterministic scheduler with one
//! extra operation, `delay`, that deviates from its default order. `next`
//! names the thread to run; `start`, `finish` and `step` tell it what the
//! program did (a thread was created, one exited, a step ran: a send, a
//! receive, a spawn, a thread that blocked, a phase the guest announced), so
//! that it can keep its order; `delay` changes its state so that `next`
//! names another thread. Explorers only order *threads*: SES (Fig. 5) and SS
//! (Fig. 7) count the delays and decide where to apply them.
//!
//! **Soundness rule** (the paper's `choices(s) = next_{|choices(s)|}(d)`):
//! in any state, calling `next`, `delay`, `next`, `delay`, ... must name
//! every enabled thread exactly once within as many calls of `next` as there
//! are enabled threads. Then SES and SS cover every behaviour of the program.
//! [`delay_cycle`] and [`is_sound_at`] check it on a state; the built-in
//! explorers' tests use them, and so can yours.
//!
//! **Alternatives** (`choose(n)`, `notify_one` with several waiters). The
//! paper orders a boolean choice `false` before `true`; we generalize: a
//! thread's alternatives are tried in increasing order, *each further value
//! costing one delay*, before a delay reaches the explorer. Precisely, the
//! [`DelayCursor`] pairs the explorer with an alternative index `alt`:
//! `next = (explorer.next(), alt)`; `delay` increments `alt` while the thread
//! `explorer.next()` has more alternatives, and otherwise resets `alt` to 0
//! and delays the explorer; every step resets `alt` to 0. So with enabled
//! threads `A` (3 alternatives) and `B` in the explorer's order, the delays
//! cycle through `A/0, A/1, A/2, B/0`: the cursor is sound whenever the
//! explorer is, and `|choices(s)|` is the number of enabled *decisions*.
//!
//! **Events and their order.** Before each decision, the cursor tells the
//! explorer what the last step did: first `start(t)` for every thread that
//! appeared since (in creation order: a spawn's children, or `main` at the
//! very start), then `finish(t)` for every thread that is gone (exited),
//! then `step(event, threads)` with the step's [`StepInfo`] and the live
//! threads after it (so an explorer can see that the thread it ran is now
//! blocked). `next` and `delay` get the live threads too, and `next` must
//! return an enabled one.
//!
//! **Writing your own.** Implement [`DelayingExplorer`] (and `Clone`: SES
//! keeps the explorer's state at every pending branch, SS at every step of
//! the sampled path), then run it with [`Ses`](crate::strategies::Ses) or
//! [`Ss`](crate::strategies::Ss). Explorer states are never hashed or cached: SES caches
//! program states only, as the paper does.

use crate::program::{StepInfo, ThreadView};
use std::collections::BTreeSet;
use wasmrace_trace::{AccessKind, Decision, Oid, Tid};

/// A delaying explorer (FSE 2015, Fig. 6); see the module documentation.
pub trait DelayingExplorer {
    /// Short name used in reports (`rr`, `rtc`, `prr`).
    fn name(&self) -> &str;

    /// Resets the explorer's random choices, if it makes any (PRR). SES
    /// calls it once with the run's seed; SS before every sample, with a
    /// seed derived from the run's seed and the sample's index. Deterministic
    /// explorers ignore it.
    fn reseed(&mut self, _seed: u64) {}

    /// Whether `reseed` changes anything: the explorer makes random choices.
    /// SES reports its seed only for those (a seed that changes nothing is
    /// not worth running twice).
    fn is_random(&self) -> bool {
        false
    }

    /// A thread was created (or is live at the very start: `main`).
    fn start(&mut self, thread: Tid);

    /// A thread exited.
    fn finish(&mut self, thread: Tid);

    /// A step ran: `event` is what it did (its thread, operation, accesses,
    /// spawned threads, message id, phase), `threads` the live threads after
    /// it, in creation order, with their pending operations.
    fn step(&mut self, _event: &StepInfo, _threads: &[ThreadView]) {}

    /// The thread to run next; must be enabled in `threads` (the live
    /// threads, in creation order; at least one is enabled).
    fn next(&self, threads: &[ThreadView]) -> Tid;

    /// Deviates from the default order: afterwards `next` names another
    /// enabled thread, and repeated delays cycle through all of them (the
    /// soundness rule).
    fn delay(&mut self, threads: &[ThreadView]);
}

/// The receiver of a send step, among `candidates`: the thread whose
/// mailbox the step wrote. `None` for every other step.
pub fn send_target(event: &StepInfo, candidates: impl IntoIterator<Item = Tid>) -> Option<Tid> {
    let wrote: BTreeSet<Oid> = event
        .accesses
        .iter()
        .filter(|a| a.kind == AccessKind::Write)
        .map(|a| a.obj)
        .collect();
    if event.op != Some(wasmrace_trace::OpKind::Send) || wrote.is_empty() {
        return None;
    }
    candidates
        .into_iter()
        .find(|t| wrote.contains(&Oid::mailbox(*t)))
}

/// The first thread of `order` that is enabled in `threads`; when `order`
/// has none (an explorer that was not told about a thread), the first
/// enabled thread.
pub fn first_enabled<'a>(order: impl IntoIterator<Item = &'a Tid>, threads: &[ThreadView]) -> Tid {
    let enabled = |t: &Tid| threads.iter().any(|v| v.tid == *t && v.pending.enabled);
    order
        .into_iter()
        .copied()
        .find(enabled)
        .or_else(|| threads.iter().find(|v| v.pending.enabled).map(|v| v.tid))
        .unwrap_or_default()
}

/// A delaying explorer paired with the alternative to try next: the state
/// `d` of the paper's `P × D`, turned into decisions. See the module
/// documentation for how alternatives and delays combine.
#[derive(Clone, Debug)]
pub struct DelayCursor<E> {
    explorer: E,
    alt: u32,
    /// Threads the explorer was told about (`start`) and not yet `finish`ed.
    known: BTreeSet<Tid>,
}

impl<E: DelayingExplorer> DelayCursor<E> {
    /// The cursor at the start of an execution: tells `explorer` about the
    /// threads live in the initial state.
    pub fn new(explorer: E, threads: &[ThreadView]) -> Self {
        let mut c = DelayCursor {
            explorer,
            alt: 0,
            known: BTreeSet::new(),
        };
        c.sync(threads);
        c
    }

    /// The delaying explorer, in the state the steps so far left it in.
    pub fn explorer(&self) -> &E {
        &self.explorer
    }

    /// `start` for new threads, `finish` for gone ones.
    fn sync(&mut self, threads: &[ThreadView]) {
        for v in threads {
            if self.known.insert(v.tid) {
                self.explorer.start(v.tid);
            }
        }
        if self.known.len() > threads.len() {
            let live: BTreeSet<Tid> = threads.iter().map(|v| v.tid).collect();
            let gone: Vec<Tid> = self.known.difference(&live).copied().collect();
            for t in gone {
                self.known.remove(&t);
                self.explorer.finish(t);
            }
        }
    }

    /// Tells the explorer what the last step did (`start`, `finish`, then
    /// `step`); `threads` are the live threads after it.
    pub fn after_step(&mut self, event: &StepInfo, threads: &[ThreadView]) {
        self.alt = 0;
        self.sync(threads);
        self.explorer.step(event, threads);
    }

    /// The decision the explorer prescribes now.
    pub fn next(&self, threads: &[ThreadView]) -> Decision {
        Decision::new(self.explorer.next(threads), self.alt)
    }

    /// One delay: the next alternative of the same thread, or, after its
    /// last, the explorer's delay.
    pub fn delay(&mut self, threads: &[ThreadView]) {
        let t = self.explorer.next(threads);
        let alts = threads
            .iter()
            .find(|v| v.tid == t)
            .map_or(1, |v| v.pending.alts);
        if self.alt + 1 < alts {
            self.alt += 1;
        } else {
            self.alt = 0;
            self.explorer.delay(threads);
        }
    }
}

/// Enabled decisions in `threads`: `|choices(s)|` of the paper.
pub fn choices(threads: &[ThreadView]) -> usize {
    threads
        .iter()
        .filter(|v| v.pending.enabled)
        .map(|v| v.pending.alts as usize)
        .sum()
}

/// The decisions `cursor` prescribes after 0, 1, ..., `choices - 1` delays
/// in the state whose live threads are `threads`.
pub fn delay_cycle<E: DelayingExplorer + Clone>(
    cursor: &DelayCursor<E>,
    threads: &[ThreadView],
) -> Vec<Decision> {
    let mut c = cursor.clone();
    let n = choices(threads);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if i > 0 {
            c.delay(threads);
        }
        out.push(c.next(threads));
    }
    out
}

/// The soundness rule in one state: the delay cycle names every enabled
/// decision exactly once.
pub fn is_sound_at<E: DelayingExplorer + Clone>(
    cursor: &DelayCursor<E>,
    threads: &[ThreadView],
) -> bool {
    let cycle = delay_cycle(cursor, threads);
    let distinct: BTreeSet<(Tid, u32)> = cycle.iter().map(|d| (d.tid, d.alt)).collect();
    let enabled: BTreeSet<(Tid, u32)> = threads
        .iter()
        .filter(|v| v.pending.enabled)
        .flat_map(|v| (0..v.pending.alts).map(move |a| (v.tid, a)))
        .collect();
    distinct.len() == cycle.len() && distinct == enabled
}

/// Thread views for the explorers' unit tests: `(tid, enabled, alts)`.
#[cfg(test)]
pub(crate) fn views(spec: &[(u64, bool, u32)]) -> Vec<ThreadView> {
    spec.iter()
        .map(|&(t, enabled, alts)| ThreadView {
            tid: Tid(t),
            pending: crate::program::Pending {
                op: if alts > 1 {
                    wasmrace_trace::OpKind::Choose
                } else {
                    wasmrace_trace::OpKind::CellSet
                },
                enabled,
                alts,
                accesses: vec![],
                site: 0,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::RoundRobin;
    use wasmrace_trace::{Access, OpKind};

    fn d(t: u64, alt: u32) -> Decision {
        Decision::new(Tid(t), alt)
    }

    #[test]
    fn alternatives_come_before_the_explorers_delay_and_each_costs_one() {
        let ts = views(&[(1, true, 3), (2, true, 1), (3, false, 2), (4, true, 2)]);
        let c = DelayCursor::new(RoundRobin::new(), &ts);
        assert_eq!(choices(&ts), 6);
        assert_eq!(
            delay_cycle(&c, &ts),
            vec![d(1, 0), d(1, 1), d(1, 2), d(2, 0), d(4, 0), d(4, 1)]
        );
        assert!(is_sound_at(&c, &ts));
        // A step resets the alternative.
        let mut c2 = c.clone();
        c2.delay(&ts);
        assert_eq!(c2.next(&ts), d(1, 1));
        c2.after_step(
            &StepInfo {
                tid: Tid(1),
                alt: 1,
                op: Some(OpKind::Choose),
                ..StepInfo::default()
            },
            &ts,
        );
        assert_eq!(c2.next(&ts), d(1, 0));
    }

    /// An explorer that ignores `delay` breaks the rule, and the check says
    /// so.
    #[test]
    fn an_explorer_that_does_not_move_on_delay_is_unsound() {
        #[derive(Clone)]
        struct Stuck;
        impl DelayingExplorer for Stuck {
            fn name(&self) -> &str {
                "stuck"
            }
            fn start(&mut self, _: Tid) {}
            fn finish(&mut self, _: Tid) {}
            fn next(&self, threads: &[ThreadView]) -> Tid {
                first_enabled([], threads)
            }
            fn delay(&mut self, _: &[ThreadView]) {}
        }
        let ts = views(&[(1, true, 1), (2, true, 1)]);
        let c = DelayCursor::new(Stuck, &ts);
        assert_eq!(delay_cycle(&c, &ts), vec![d(1, 0), d(1, 0)]);
        assert!(!is_sound_at(&c, &ts));
        // One enabled thread: trivially sound.
        assert!(is_sound_at(&c, &views(&[(1, true, 1), (2, false, 1)])));
    }

    #[test]
    fn the_cursor_tells_the_explorer_about_new_and_gone_threads() {
        #[derive(Clone, Default)]
        struct Log(Vec<String>);
        impl DelayingExplorer for Log {
            fn name(&self) -> &str {
                "log"
            }
            fn start(&mut self, t: Tid) {
                self.0.push(format!("start {}", t.0));
            }
            fn finish(&mut self, t: Tid) {
                self.0.push(format!("finish {}", t.0));
            }
            fn step(&mut self, e: &StepInfo, threads: &[ThreadView]) {
                self.0
                    .push(format!("step {} ({} live)", e.tid.0, threads.len()));
            }
            fn next(&self, threads: &[ThreadView]) -> Tid {
                first_enabled([], threads)
            }
            fn delay(&mut self, _: &[ThreadView]) {}
        }
        let mut c = DelayCursor::new(Log::default(), &views(&[(1, true, 1)]));
        let spawn = StepInfo {
            tid: Tid(1),
            op: Some(OpKind::Spawn),
            spawned: vec![Tid(2), Tid(3)],
            ..StepInfo::default()
        };
        c.after_step(&spawn, &views(&[(1, true, 1), (2, true, 1), (3, true, 1)]));
        let exit = StepInfo {
            tid: Tid(2),
            op: Some(OpKind::Exit),
            ..StepInfo::default()
        };
        c.after_step(&exit, &views(&[(1, true, 1), (3, true, 1)]));
        assert_eq!(
            c.explorer().0,
            vec![
                "start 1",
                "start 2",
                "start 3",
                "step 1 (3 live)",
                "finish 2",
                "step 2 (2 live)"
            ]
        );
    }

    #[test]
    fn send_target_finds_the_receiver_by_its_mailbox() {
        let send = StepInfo {
            tid: Tid(1),
            op: Some(OpKind::Send),
            accesses: vec![Access::write(Oid::mailbox(Tid(7)))],
            message: Some((Tid(1), 0)),
            ..StepInfo::default()
        };
        assert_eq!(send_target(&send, [Tid(3), Tid(7)]), Some(Tid(7)));
        assert_eq!(send_target(&send, [Tid(3)]), None);
        let recv = StepInfo {
            op: Some(OpKind::Recv),
            ..send.clone()
        };
        assert_eq!(send_target(&recv, [Tid(7)]), None);
    }
}
