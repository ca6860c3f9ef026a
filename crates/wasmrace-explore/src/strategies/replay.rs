//! Replays a recorded schedule (e.g. from a schedule file) exactly once.
//! Every decision must be enabled when its turn comes; the first one that is
//! not, a schedule that runs out while the execution is still running, or an
//! execution that ends before the schedule does, is a *divergence*: the
//! replay abandons the execution and says where and why, in thread names the
//! user knows (`main.1`), so that `wasmrace replay` can refuse a stale or
//! edited schedule clearly instead of running something else.

use crate::program::StepInfo;
use crate::strategy::{Context, Outcome, Profile, Standing, Start, Strategy};
use std::collections::BTreeMap;
use wasmrace_trace::{Decision, FailureKind, OpKind, Schedule, ThreadPath, Tid};

/// How many children of each known thread `Replay` tries when naming a
/// thread id it has not seen spawned.
const GUESSED_CHILDREN: u32 = 64;

/// Where and why a replay left its schedule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("schedule diverged at step {step}: {reason}")]
pub struct Divergence {
    /// 1-based step number, as in traces and schedule files: the step whose
    /// decision could not be taken.
    pub step: usize,
    /// Why its decision could not be taken.
    pub reason: DivergenceReason,
}

/// Why a replay could not take the schedule's next decision, or why the
/// schedule and the execution ended at different steps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DivergenceReason {
    /// The thread has not been spawned (yet), has exited, or never exists.
    #[error("thread `{thread}` is not enabled (there is no such live thread at this point)")]
    NotLive {
        /// The thread's name (its path, e.g. `main.1`).
        thread: String,
    },
    /// The thread is alive but its next operation is blocked.
    #[error("thread `{thread}` is not enabled (its next operation `{}` is blocked)", .op.name())]
    Disabled {
        /// The thread's name.
        thread: String,
        /// Its pending operation.
        op: OpKind,
    },
    /// The thread is enabled but its operation has fewer alternatives.
    #[error("thread `{thread}` has no alternative {alt} for its next operation `{}` (it has {alts})", .op.name())]
    NoSuchAlternative {
        /// The thread's name.
        thread: String,
        /// Its pending operation.
        op: OpKind,
        /// The alternative the schedule asks for.
        alt: u32,
        /// The alternatives the operation has.
        alts: u32,
    },
    /// The schedule has no more decisions but the execution goes on.
    #[error("the schedule ended but the execution is still running (enabled: {})", .enabled.join(", "))]
    ScheduleEnded {
        /// The names of the enabled threads.
        enabled: Vec<String>,
    },
    /// The execution ended with decisions left over.
    #[error("the execution ended after {ran} steps but the schedule has {len}")]
    ExecutionEnded {
        /// Steps the execution ran.
        ran: usize,
        /// Decisions in the schedule.
        len: usize,
    },
}

/// Replays one schedule once; see the module documentation.
#[derive(Clone, Debug)]
pub struct Replay {
    decisions: Vec<Decision>,
    /// Thread names as written in the schedule file, when known: the only
    /// way to name a thread the execution never creates.
    file_names: Vec<Option<String>>,
    started: bool,
    /// Decisions taken so far.
    pos: usize,
    divergence: Option<Divergence>,
    outcome: Option<Outcome>,
    /// The threads seen so far, each with its parent and its index among
    /// the parent's children (`None` for `main`), learned from spawn steps
    /// the way the host names threads (the `k`-th child of `p` is `p.k`).
    /// A link per thread, not a whole path, so a chain of n spawns costs
    /// O(n), not O(n²).
    parents: BTreeMap<Tid, Option<(Tid, u32)>>,
    children: BTreeMap<Tid, u32>,
    /// The schedule records a livelock: ask for state hashes, so that the
    /// explorer sees the lasso close where the schedule ends.
    lasso: bool,
}

impl Replay {
    /// Replays `decisions` once, naming threads by their paths.
    pub fn new(decisions: Vec<Decision>) -> Self {
        let n = decisions.len();
        Replay {
            decisions,
            file_names: vec![None; n],
            started: false,
            pos: 0,
            divergence: None,
            outcome: None,
            parents: BTreeMap::from([(Tid::MAIN, None)]),
            children: BTreeMap::new(),
            lasso: false,
        }
    }

    /// Replays a schedule file's steps, naming threads as the file does.
    pub fn from_schedule(schedule: &Schedule) -> Self {
        let mut r = Replay::new(schedule.decisions());
        r.file_names = schedule
            .steps
            .iter()
            .map(|s| Some(s.thread.clone()))
            .collect();
        r.lasso = schedule
            .failure
            .as_ref()
            .is_some_and(|f| f.kind == FailureKind::Livelock);
        r
    }

    /// Why the replay left its schedule, if it did.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }

    /// How the execution ended, once it has.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// Decisions replayed so far.
    pub fn replayed(&self) -> usize {
        self.pos
    }

    /// The execution ran and followed the whole schedule, to its end.
    pub fn reproduced(&self) -> bool {
        self.outcome.is_some() && self.divergence.is_none()
    }

    fn name(&self, tid: Tid, step: usize) -> String {
        if let Some(p) = self.path(tid) {
            return p.compact();
        }
        if let Some(n) = self.file_names.get(step).cloned().flatten() {
            return n;
        }
        // Ids are hashes of paths: a thread that does not exist (yet) can
        // still be named if it is a near-future child of a known thread.
        for &parent in self.parents.keys() {
            for k in 1..=GUESSED_CHILDREN {
                if parent.child(k) == tid {
                    let path = self.path(parent).expect("a known thread has a path");
                    return path.child(k).compact();
                }
            }
        }
        format!("{tid:?}")
    }

    /// The path of a thread seen so far, rebuilt from its parent links.
    fn path(&self, mut tid: Tid) -> Option<ThreadPath> {
        let mut rev = Vec::new();
        while let Some((parent, k)) = *self.parents.get(&tid)? {
            rev.push(k);
            tid = parent;
        }
        rev.reverse();
        Some(ThreadPath(rev))
    }

    fn diverge(&mut self, step: usize, reason: DivergenceReason) -> Option<Decision> {
        self.divergence = Some(Divergence {
            step: step + 1,
            reason,
        });
        None
    }
}

impl Strategy for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn begin(&mut self, _executions: u64) -> Option<Start> {
        if self.started {
            return None;
        }
        self.started = true;
        Some(Start::Fresh)
    }

    fn decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let step = ctx.step;
        let Some(&d) = self.decisions.get(step) else {
            let enabled = ctx
                .threads
                .iter()
                .filter(|t| t.pending.enabled)
                .map(|t| self.name(t.tid, step))
                .collect();
            return self.diverge(step, DivergenceReason::ScheduleEnded { enabled });
        };
        let thread = self.name(d.tid, step);
        match ctx.thread(d.tid) {
            None => self.diverge(step, DivergenceReason::NotLive { thread }),
            Some(t) if !t.pending.enabled => {
                let op = t.pending.op;
                self.diverge(step, DivergenceReason::Disabled { thread, op })
            }
            Some(t) if d.alt >= t.pending.alts => {
                let (op, alts) = (t.pending.op, t.pending.alts);
                self.diverge(
                    step,
                    DivergenceReason::NoSuchAlternative {
                        thread,
                        op,
                        alt: d.alt,
                        alts,
                    },
                )
            }
            Some(_) => {
                self.pos = step + 1;
                Some(d)
            }
        }
    }

    fn observe(&mut self, step: &StepInfo) {
        if step.spawned.is_empty() {
            return;
        }
        if !self.parents.contains_key(&step.tid) {
            return;
        }
        for &child in &step.spawned {
            let k = self.children.entry(step.tid).or_insert(0);
            *k += 1;
            self.parents.insert(child, Some((step.tid, *k)));
        }
    }

    fn end(&mut self, outcome: &Outcome) {
        // A lasso closes where the schedule ends: the end is the failure.
        let closed = matches!(outcome, Outcome::Failed(f) if f.kind == FailureKind::Livelock);
        if closed && self.pos == self.decisions.len() {
            self.divergence = None;
        }
        if self.divergence.is_none()
            && *outcome != Outcome::Abandoned
            && self.pos < self.decisions.len()
        {
            self.divergence = Some(Divergence {
                step: self.pos + 1,
                reason: DivergenceReason::ExecutionEnded {
                    ran: self.pos,
                    len: self.decisions.len(),
                },
            });
        }
        self.outcome = Some(outcome.clone());
    }

    /// A lasso's replay hashes states, to close the cycle where it did.
    fn profile(&self) -> Profile {
        Profile {
            hashes_states: self.lasso,
            ..Profile::default()
        }
    }

    /// A replay has one execution to run; once run, it is done.
    fn standing(&self) -> Standing<'_> {
        Standing {
            exhausted: self.outcome.is_some(),
            ..Standing::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{Pending, ThreadView};
    use wasmrace_trace::ScheduleStep;

    fn view(tid: Tid, op: OpKind, enabled: bool, alts: u32) -> ThreadView {
        ThreadView {
            tid,
            pending: Pending {
                op,
                enabled,
                alts,
                accesses: vec![],
                site: 0,
            },
        }
    }

    fn ctx(step: usize, threads: &[ThreadView]) -> Context<'_> {
        Context {
            step,
            threads,
            hidden: 0,
            last: None,
            prefix: &[],
        }
    }

    /// Each thread once kept its whole path, so replaying a chain of n
    /// spawns held n²/2 path entries (a hostile 8,000-deep chain: 32
    /// million); now each keeps a link to its parent, and a deep thread is
    /// named in the compact form the host uses.
    #[test]
    fn a_deep_spawn_chain_is_named_compactly_from_parent_links() {
        let depth = 20_000;
        let mut r = Replay::new(vec![]);
        let mut tid = Tid::MAIN;
        for _ in 0..depth {
            let child = tid.child(1);
            r.observe(&StepInfo {
                tid,
                spawned: vec![child],
                ..StepInfo::default()
            });
            tid = child;
        }
        assert_eq!(r.parents.len(), depth + 1);
        assert_eq!(r.name(tid, 0), format!("main.1*{depth}"));
        // A near-future child of a known thread is guessed from its id.
        assert_eq!(r.name(tid.child(3), 0), format!("main.1*{depth}.3"));
    }

    #[test]
    fn follows_the_schedule_and_learns_thread_names_from_spawns() {
        let main = ThreadPath::main();
        let c1 = main.child(1);
        let g = c1.child(1);
        let mut r = Replay::new(vec![
            Decision::new(main.tid(), 0),
            Decision::new(c1.tid(), 0),
            Decision::new(g.tid(), 2),
        ]);
        assert_eq!(r.begin(0), Some(Start::Fresh));
        let ts = [view(main.tid(), OpKind::Spawn, true, 1)];
        assert_eq!(r.decide(&ctx(0, &ts)), Some(Decision::new(main.tid(), 0)));
        r.observe(&StepInfo {
            tid: main.tid(),
            spawned: vec![c1.tid()],
            ..StepInfo::default()
        });
        let ts = [
            view(main.tid(), OpKind::Exit, true, 1),
            view(c1.tid(), OpKind::Spawn, true, 1),
        ];
        assert_eq!(r.decide(&ctx(1, &ts)), Some(Decision::new(c1.tid(), 0)));
        r.observe(&StepInfo {
            tid: c1.tid(),
            spawned: vec![g.tid()],
            ..StepInfo::default()
        });
        // The grandchild only has 2 alternatives.
        let ts = [
            view(main.tid(), OpKind::Exit, true, 1),
            view(g.tid(), OpKind::Choose, true, 2),
        ];
        assert_eq!(r.decide(&ctx(2, &ts)), None);
        let div = r.divergence().unwrap().clone();
        assert_eq!(div.step, 3);
        assert_eq!(
            div.to_string(),
            "schedule diverged at step 3: thread `main.1.1` has no alternative 2 for its next operation `choose` (it has 2)"
        );
        r.end(&Outcome::Abandoned);
        assert!(!r.reproduced());
        assert_eq!(r.replayed(), 2);
        assert!(r.standing().exhausted);
        assert_eq!(r.begin(1), None, "one execution only");
    }

    #[test]
    fn names_come_from_the_schedule_file_when_the_thread_never_appears() {
        let s = Schedule::new(
            "00".repeat(32),
            "t".into(),
            "dfs".into(),
            0,
            Default::default(),
            None,
            vec![ScheduleStep {
                thread: "main.9.9".into(),
                alt: 0,
            }],
        );
        let mut r = Replay::from_schedule(&s);
        r.begin(0);
        let ts = [view(ThreadPath::main().tid(), OpKind::Recv, false, 1)];
        assert_eq!(r.decide(&ctx(0, &ts)), None);
        assert_eq!(
            r.divergence().unwrap().to_string(),
            "schedule diverged at step 1: thread `main.9.9` is not enabled (there is no such live thread at this point)"
        );
    }

    #[test]
    fn running_out_and_running_over_are_divergences() {
        let main = ThreadPath::main();
        let mut r = Replay::new(vec![]);
        r.begin(0);
        let ts = [
            view(main.tid(), OpKind::Exit, true, 1),
            view(main.child(1).tid(), OpKind::Recv, false, 1),
        ];
        assert_eq!(r.decide(&ctx(0, &ts)), None);
        assert_eq!(
            r.divergence().unwrap().to_string(),
            "schedule diverged at step 1: the schedule ended but the execution is still running (enabled: main)"
        );

        let mut r = Replay::new(vec![Decision::new(main.tid(), 0); 3]);
        r.begin(0);
        let ts = [view(main.tid(), OpKind::Exit, true, 1)];
        r.decide(&ctx(0, &ts)).unwrap();
        r.end(&Outcome::Finished);
        assert_eq!(
            r.divergence().unwrap().reason,
            DivergenceReason::ExecutionEnded { ran: 1, len: 3 }
        );
        assert_eq!(r.outcome(), Some(&Outcome::Finished));

        let mut r = Replay::new(vec![Decision::new(main.tid(), 0)]);
        r.begin(0);
        r.decide(&ctx(0, &ts)).unwrap();
        r.end(&Outcome::Finished);
        assert!(r.reproduced());
    }
}
