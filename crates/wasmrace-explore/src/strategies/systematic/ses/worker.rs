//! One worker of SES on several threads: runs the executions the pool
//! ([`SesRounds`]) hands it, each from its entry's state with one more
//! delay, then along the explorer, stopping at a state it finds cached or
//! on its own path, and tells the pool how it went.
//!
//! **Reaching an entry.** The pool keeps paths as decisions, each with the
//! transitions its frame had taken ([`Path`]), not explorer states: the
//! worker replays the prefix through `decide`, rebuilding each frame's
//! explorer state as one thread built it (the parent's after the step,
//! then one delay per transition taken before), and checks that it
//! prescribes the recorded decision. Frames of the previous execution's
//! path are kept as far as the two paths agree, where the explorer
//! resumes.

use super::rounds::{Entry, Handed, Mark, Path, Record, SesRounds};
use super::{Frame, Ses};
use crate::program::StepInfo;
use crate::strategies::delaying::explorer::DelayingExplorer;
use crate::strategy::{Context, Outcome, Start};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use wasmrace_trace::Decision;

/// A worker's side of the pool.
#[derive(Clone, Debug)]
pub(super) struct Worker {
    pub(super) pool: Arc<SesRounds>,
    /// Entries taken and not run yet, in order.
    run: VecDeque<Handed>,
    /// The entry of the current execution.
    at: Option<Handed>,
    /// The current execution's path.
    path: Path,
    /// The states of the path from the entry's on, for its own cycles
    /// (those before it: [`before`](Self::before)).
    own: HashSet<[u8; 32]>,
    cached: Option<[u8; 32]>,
    /// The frames made at new states, in order (the record of the
    /// execution; their hashes are the path's at their depths).
    marks: Vec<Mark>,
    resumed: Option<Mark>,
    /// What each step of the path did, for the frames below it (the
    /// explorer shows a step only when it runs it, not when it resumes
    /// past it).
    events: Vec<StepInfo>,
}

impl Worker {
    pub(super) fn new(pool: Arc<SesRounds>) -> Self {
        Worker {
            pool,
            run: VecDeque::new(),
            at: None,
            path: Path::default(),
            own: HashSet::new(),
            cached: None,
            marks: Vec::new(),
            resumed: None,
            events: Vec::new(),
        }
    }

    /// What the last step of the path did.
    pub(super) fn last_event(&self) -> Option<&StepInfo> {
        self.events.last()
    }

    /// The step just decided ran as `event`.
    pub(super) fn observe(&mut self, event: &StepInfo) {
        self.events
            .truncate(self.path.decisions.len().saturating_sub(1));
        self.events.push(event.clone());
    }

    /// The hashes of the states before the current entry's, which one
    /// thread's saved state keeps with its prefix.
    pub(super) fn entry_hashes(&self) -> &[Option<[u8; 32]>] {
        match self.at.as_ref().map(|h| &h.entry) {
            Some(Entry::Resume { path, at }) => &path.states[..at.depth.min(path.states.len())],
            _ => &[],
        }
    }

    /// Whether `h` is a state before the entry's: a cycle back to it is
    /// one on the path, as for one thread, stopped at whatever the cache
    /// holds (and run again past it if one thread finds it evicted). A
    /// scan, asked only of a state neither cached nor on the path since
    /// the entry: putting the prefix into `own` at every entry cost 7 to
    /// 10% of `two_phase_commit_2`'s run on two threads.
    fn before(&self, h: &[u8; 32]) -> bool {
        self.entry_hashes().iter().any(|s| s.as_ref() == Some(h))
    }

    /// Starts `handed`: keeps the path as far as it agrees with the
    /// entry's prefix, which is where the explorer resumes.
    fn start(&mut self, handed: Handed) -> usize {
        let lcp = match &handed.entry {
            Entry::Fresh => 0,
            Entry::Resume { path, at } => {
                let ours = self.path.decisions.iter().zip(&self.path.took);
                let theirs = path.decisions.iter().zip(&path.took);
                ours.zip(theirs.take(at.depth))
                    .take_while(|(a, b)| a == b)
                    .count()
            }
        };
        self.path.decisions.truncate(lcp);
        self.path.took.truncate(lcp);
        self.path.states.truncate(lcp);
        self.events.truncate(lcp);
        self.own.clear();
        self.marks.clear();
        (self.cached, self.resumed, self.at) = (None, None, Some(handed));
        lcp
    }

    /// Adds step `d`, taken at the state hashed `state`.
    fn push(&mut self, d: Decision, took: u32, state: Option<[u8; 32]>) {
        self.path.decisions.push(d);
        self.path.took.push(took);
        self.path.states.push(state);
    }
}

/// What a worker's next decision is.
enum Now {
    /// Step of the entry's prefix: the recorded decision and transitions,
    /// and the state's hash.
    Replay(Decision, u32, Option<[u8; 32]>),
    /// At the entry's state: its frame, resumed with one more delay.
    Resume(Mark),
    /// At a new state, not to be stopped at before state `trust`.
    New(usize),
}

impl<E: DelayingExplorer + Clone> Ses<E> {
    /// `begin` for a worker: the next entry the pool hands out, started
    /// where the last execution parts from its prefix; `None` once the
    /// run is over.
    pub(super) fn worker_begin(&mut self) -> Option<Start> {
        let w = self.worker.as_mut()?;
        if w.run.is_empty() && !w.pool.take(&mut w.run) {
            self.exhausted = w.pool.exhausted();
            return None;
        }
        let handed = w.run.pop_front()?;
        let lcp = w.start(handed);
        self.frames.truncate(lcp);
        self.hash = None;
        Some(if lcp == 0 {
            self.frames.clear();
            Start::Fresh
        } else {
            Start::Resume { prefix_len: lcp }
        })
    }

    /// `decide` for a worker: the entry's prefix, then its frame resumed
    /// with a delay, then a frame per new state; `None` at a state cached
    /// already or seen on the path (one thread stops there too, unless the
    /// pool finds it evicted meanwhile), or where the replayed prefix
    /// parts from the recorded one (a program that is not deterministic).
    pub(super) fn worker_decide(&mut self, ctx: &Context<'_>) -> Option<Decision> {
        let hash = self.hash.take();
        let step = ctx.step;
        let w = self.worker.as_mut()?;
        let handed = w.at.as_ref()?;
        let now = match &handed.entry {
            Entry::Resume { path, at } if step < at.depth => {
                let state = path.states.get(step).copied().flatten();
                Now::Replay(path.decisions[step], path.took[step], state)
            }
            Entry::Resume { at, .. } if step == at.depth => Now::Resume(*at),
            _ => Now::New(handed.trust),
        };
        match now {
            Now::Replay(want, took, state) => {
                let d = self.replay_frame(ctx, took, state);
                (d == want).then_some(d)
            }
            Now::Resume(at) => {
                // A cycle back to it is one on the path, as for one thread.
                w.own.extend(hash);
                let took = at.took + 1;
                w.resumed = Some(Mark { took, ..at });
                Some(self.replay_frame(ctx, took, hash))
            }
            Now::New(trust) => {
                if let Some(h) = hash {
                    let trusted = w.marks.len() < trust;
                    if !trusted && (w.own.contains(&h) || w.pool.cached(&h) || w.before(&h)) {
                        w.cached = Some(h);
                        return None;
                    }
                    w.own.insert(h);
                }
                let frame = self.new_frame(ctx);
                let choices = frame.choices as u32;
                let d = self.take_first(frame, ctx, hash);
                let w = self.worker.as_mut()?;
                w.marks.push(Mark {
                    depth: step,
                    took: 1,
                    choices,
                });
                Some(d)
            }
        }
    }

    /// Takes `frame`'s first transition (at the state hashed `state`):
    /// pushed with its decision, which is returned.
    fn take_first(
        &mut self,
        mut frame: Frame<E>,
        ctx: &Context<'_>,
        state: Option<[u8; 32]>,
    ) -> Decision {
        let d = frame.cursor.next(ctx.threads);
        frame.i = 1;
        self.frames.push(frame);
        if let Some(w) = self.worker.as_mut() {
            w.push(d, 1, state);
        }
        d
    }

    /// The frame of step `ctx.step` of a replayed path (at the state
    /// hashed `state`), its explorer state rebuilt after `took - 1`
    /// delays; pushed with its decision, which is returned.
    fn replay_frame(&mut self, ctx: &Context<'_>, took: u32, state: Option<[u8; 32]>) -> Decision {
        let mut frame = self.new_frame(ctx);
        for _ in 1..took {
            frame.cursor.delay(ctx.threads);
        }
        let d = frame.cursor.next(ctx.threads);
        frame.i = took as usize;
        self.frames.push(frame);
        if let Some(w) = self.worker.as_mut() {
            w.push(d, took, state);
        }
        d
    }

    /// `end` for a worker: hands the execution's record to the pool.
    pub(super) fn worker_end(&mut self, outcome: &Outcome) {
        let Some(w) = &mut self.worker else {
            return;
        };
        let Some(handed) = w.at.take() else {
            return;
        };
        let record = Record {
            frames: std::mem::take(&mut w.marks),
            resumed: w.resumed.take(),
            cached: w.cached.take(),
            failure: match outcome {
                Outcome::Failed(f) => Some(f.clone()),
                _ => None,
            },
            path: Arc::new(w.path.clone()),
        };
        w.pool.ended(handed, record);
    }
}
