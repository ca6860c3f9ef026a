//! The current path of an exploration: its decisions, the operation each
//! ran, the cost accumulated along it, and the snapshots held on it; and the
//! one way back to a prefix of it (restore the deepest snapshot the target
//! shares with the path, or the base after the forced prefix every path
//! starts with, or reset; then replay the rest).

use super::Report;
use crate::program::{Onward, Program, Status};
use wasmrace_trace::{Decision, OpKind, Tid};

/// A decision and the operation it ran (for preemption accounting after a
/// resume: a switch after `yield_now` is not a preemption).
pub(crate) type PathStep = (Decision, Option<OpKind>);

/// See the module documentation.
pub(crate) struct PathSnapshots<S> {
    decisions: Vec<Decision>,
    ops: Vec<Option<OpKind>>,
    /// Cost accumulated from the start, per prefix length (`costs[i]` after
    /// `i + 1` steps).
    costs: Vec<u64>,
    /// Snapshots along the path: (prefix length, snapshot), shallowest
    /// first.
    snaps: Vec<(usize, S)>,
    /// `Config::snapshot_every_cost`, `Config::snapshot_resume_returns` and
    /// `Config::max_snapshots`.
    every: Option<u64>,
    resume: Option<u32>,
    max: usize,
    /// Rewinds so far, and `born[d]`: their count when the path's first
    /// `d` steps last changed, so that `rewinds - born[d]` is how often
    /// the path was rewound to a length of at least `d` since. Stamps,
    /// rather than a counter per length, so that a rewind touches only
    /// the lengths it replays.
    rewinds: u64,
    born: Vec<u64>,
    /// The state after the forced prefix (`forced.rs`), which every path of
    /// the program starts with: (its length, a snapshot). Kept across
    /// resets, used where no snapshot of the path lies deeper.
    base: Option<(usize, S)>,
}

impl<S> PathSnapshots<S> {
    pub(crate) fn new(every: Option<u64>, resume: Option<u32>, max: usize) -> Self {
        PathSnapshots {
            decisions: Vec::new(),
            ops: Vec::new(),
            costs: Vec::new(),
            snaps: Vec::new(),
            every,
            resume,
            max,
            rewinds: 0,
            born: Vec::new(),
            base: None,
        }
    }

    /// Holds `snap`, taken at the end of the path, as the base: the state
    /// after the forced prefix every path of the program starts with.
    pub(crate) fn set_base(&mut self, snap: S) {
        self.base = Some((self.decisions.len(), snap));
    }

    /// Empties the path without touching the program, which is stale until
    /// a `rewind`: for a fresh start that records the forced prefix first.
    pub(crate) fn clear(&mut self) {
        self.decisions.clear();
        self.ops.clear();
        self.costs.clear();
        self.snaps.clear();
        self.born.clear();
    }

    pub(crate) fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    pub(crate) fn ops(&self) -> &[Option<OpKind>] {
        &self.ops
    }

    pub(crate) fn len(&self) -> usize {
        self.decisions.len()
    }

    /// The thread that took the last step and the operation it ran.
    pub(crate) fn last(&self) -> Option<(Tid, Option<OpKind>)> {
        let d = self.decisions.last()?;
        Some((d.tid, self.ops.last().copied().flatten()))
    }

    /// Back to the program's initial state, with an empty path.
    pub(crate) fn reset<P>(&mut self, program: &mut P) -> Result<(), P::Error>
    where
        P: Program<Snapshot = S>,
    {
        program.reset()?;
        self.clear();
        Ok(())
    }

    /// Gets the program to the first `keep` steps of the current path
    /// followed by `then`: restores the deepest snapshot held within those
    /// `keep` steps (or the base, or resets), then replays the rest (going on in place
    /// when `in_place`), counting replayed steps in `report`. The path
    /// becomes that prefix; a snapshot is taken at its end when the resume
    /// policy asks for one (`Config::snapshot_resume_returns`).
    pub(crate) fn rewind<P>(
        &mut self,
        program: &mut P,
        keep: usize,
        then: &[PathStep],
        in_place: bool,
        report: &mut Report,
    ) -> Result<(), P::Error>
    where
        P: Program<Snapshot = S>,
    {
        while self.snaps.last().is_some_and(|(len, _)| *len > keep) {
            self.snaps.pop();
        }
        // The base lies on every path: on this one as soon as it is long
        // enough, whatever `then` holds.
        let base = self
            .base
            .as_ref()
            .filter(|(len, _)| *len <= keep + then.len());
        let from = match deeper(self.snaps.last(), base) {
            Some((len, snap)) => {
                program.restore(snap)?;
                report.restores += 1;
                *len
            }
            None => {
                program.reset()?;
                0
            }
        };
        // Past `keep` the old costs are another path's: the steps up to a
        // base past it count as free, as nothing older is restored.
        self.costs.truncate(from.min(keep));
        let last = self.costs.last().copied().unwrap_or(0);
        self.costs.resize(from, last);
        self.decisions.truncate(keep);
        self.ops.truncate(keep);
        self.decisions.extend(then.iter().map(|(d, _)| *d));
        self.ops.extend(then.iter().map(|(_, op)| *op));
        replay(
            program,
            &self.decisions[from..],
            in_place,
            &mut self.costs,
            report,
        )?;
        let len = self.decisions.len();
        if self.returned(keep, len) && from < len {
            self.snapshot(program, report)?;
        }
        Ok(())
    }

    /// Counts a rewind to length `len` that kept the path's first `keep`
    /// steps, and says whether the resume policy wants a snapshot there
    /// (`Config::snapshot_resume_returns`). A strategy that keeps coming
    /// back to a prefix will come back again (DFS returns below a frame
    /// once per alternative of every frame under it), while a snapshot
    /// where it came back once or twice is mostly never restored: it costs
    /// a copy of every page written since the last one, several replayed
    /// steps' worth.
    fn returned(&mut self, keep: usize, len: usize) -> bool {
        // Lengths past `keep` are new: born at this rewind, counted once.
        self.born.truncate(keep + 1);
        self.born.resize(len + 1, self.rewinds);
        self.rewinds += 1;
        let returns = self.rewinds - self.born[len];
        self.resume.is_some_and(|n| returns >= u64::from(n))
    }

    /// Starts from a restored snapshot of the state `path` leads to: the
    /// path becomes `path`, with that snapshot held for backtracking below
    /// it (costs before it count as zero, as nothing older can be restored).
    pub(crate) fn start_at(&mut self, path: &[PathStep], snap: S) {
        let len = path.len();
        self.decisions.clear();
        self.ops.clear();
        self.decisions.extend(path.iter().map(|(d, _)| *d));
        self.ops.extend(path.iter().map(|(_, op)| *op));
        self.snaps.clear();
        self.snaps.push((len, snap));
        self.costs.clear();
        self.costs.resize(len, 0);
        self.born.clear();
    }

    /// Takes a snapshot at the end of the path (after the step just
    /// recorded), if the program is still running and can take one.
    pub(crate) fn snapshot<P>(
        &mut self,
        program: &mut P,
        report: &mut Report,
    ) -> Result<(), P::Error>
    where
        P: Program<Snapshot = S>,
    {
        if !matches!(program.status(), Status::Running) {
            return Ok(());
        }
        if let Some(s) = program.snapshot()? {
            report.snapshots_taken += 1;
            self.snaps.push((self.decisions.len(), s));
            if self.snaps.len() > self.max {
                self.snaps.remove(0);
            }
        }
        Ok(())
    }

    /// Records a step just taken, without a snapshot.
    pub(crate) fn record(&mut self, d: Decision, op: Option<OpKind>, cost: u64) {
        self.decisions.push(d);
        self.ops.push(op);
        let acc = self.costs.last().copied().unwrap_or(0) + cost;
        self.costs.push(acc);
    }

    /// Whether the policy wants a snapshot after recording a step of
    /// `cost` next (`Config::snapshot_every_cost` reached since the last).
    pub(crate) fn snapshot_due(&self, cost: u64) -> bool {
        let Some(every) = self.every else {
            return false;
        };
        let acc = self.costs.last().copied().unwrap_or(0) + cost;
        let base = self.base.as_ref().filter(|(len, _)| *len <= self.len());
        let since = match deeper(self.snaps.last(), base) {
            Some((len, _)) if *len > 0 => self.costs[*len - 1],
            _ => 0,
        };
        acc - since >= every
    }
}

/// The deeper of a snapshot of the path and the base (either may be
/// missing).
fn deeper<'s, S>(
    snap: Option<&'s (usize, S)>,
    base: Option<&'s (usize, S)>,
) -> Option<&'s (usize, S)> {
    match (snap, base) {
        (Some(s), Some(b)) if b.0 > s.0 => Some(b),
        (s, b) => s.or(b),
    }
}

/// Replays `decisions` to get back to a start point, pushing each step's
/// accumulated cost on `costs` and counting replayed steps in `report`.
/// With `in_place`, a thread that takes several decisions in a row goes
/// on in place ([`Program::step_on`]).
fn replay<P: Program>(
    program: &mut P,
    decisions: &[Decision],
    in_place: bool,
    costs: &mut Vec<u64>,
    report: &mut Report,
) -> Result<(), P::Error> {
    let mut took = |cost: u64, report: &mut Report| {
        costs.push(costs.last().copied().unwrap_or(0) + cost);
        report.steps += 1;
        report.replayed_steps += 1;
    };
    if !in_place {
        for &d in decisions {
            let cost = program.step(d)?.cost;
            took(cost, report);
        }
        return Ok(());
    }
    let mut k = 0;
    while k < decisions.len() {
        // `k` is the step the program runs; `taken` says whether the
        // callback took in the step `step_on` returns.
        let mut taken = false;
        let info = program.step_on(decisions[k], &mut |info, _, tid| {
            took(info.cost, report);
            k += 1;
            match decisions.get(k) {
                Some(&d) if d.tid == tid => {
                    taken = false;
                    Onward::Take(d)
                }
                _ => {
                    taken = true;
                    Onward::Pause
                }
            }
        })?;
        if !taken {
            took(info.cost, report);
            k += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::PathSnapshots;
    use crate::model::{Model, ModelBuilder};
    use crate::program::{Program, Status};
    use crate::Report;
    use wasmrace_trace::Decision;

    /// One thread writing a variable eight times: a path of 8 steps.
    fn eight_writes() -> Model {
        let mut b = ModelBuilder::new();
        let x = b.var("x", 0);
        b.main(|t| {
            for v in 0..8 {
                t.write(x, v);
            }
        });
        b.build().unwrap()
    }

    /// Runs `model` to its end along `path` (the only enabled thread each
    /// time).
    fn run_to_end(model: &mut Model, path: &mut PathSnapshots<<Model as Program>::Snapshot>) {
        while matches!(model.status(), Status::Running) {
            let tid = model
                .threads()
                .iter()
                .find(|t| t.pending.enabled)
                .unwrap()
                .tid;
            let d = Decision::new(tid, 0);
            let info = model.step(d).unwrap();
            let (op, cost) = (info.op, info.cost);
            path.record(d, op, cost);
        }
    }

    /// A rewind onto a new path restores the base where it lies on that
    /// path, even past the steps kept, and the costs stay one per step
    /// (they were another path's past the kept steps, and fewer than the
    /// base's length after a short execution).
    #[test]
    fn the_base_serves_any_path_long_enough() {
        let mut model = eight_writes();
        let mut path = PathSnapshots::new(Some(1_000_000), None, 64);
        let mut report = Report::default();
        path.reset(&mut model).unwrap();
        run_to_end(&mut model, &mut path);
        let steps: Vec<(Decision, _)> = (path.decisions.iter().copied())
            .zip(path.ops.iter().copied())
            .collect();
        path.rewind(&mut model, 5, &[], false, &mut report).unwrap();
        let snap = model.snapshot().unwrap().unwrap();
        path.set_base(snap);
        // A short execution, then a new path that keeps none of it.
        path.rewind(&mut model, 2, &[], false, &mut report).unwrap();
        let replayed = report.replayed_steps;
        path.rewind(&mut model, 0, &steps, false, &mut report)
            .unwrap();
        assert_eq!(report.restores, 1, "restored the base");
        let past = steps.len() as u64 - 5;
        assert_eq!(report.replayed_steps - replayed, past, "replayed past it");
        assert_eq!(path.costs.len(), path.decisions.len());
        assert!(!path.snapshot_due(1));
        run_to_end(&mut model, &mut path);
        assert_eq!(path.costs.len(), path.decisions.len());
    }

    /// The resume policy snapshots a resume point at the `n`-th return to
    /// it, restores that snapshot from then on, and counts returns below
    /// a prefix for every shorter prefix too (DFS returning above).
    #[test]
    fn a_resume_point_is_snapshotted_at_its_nth_return() {
        let mut model = eight_writes();
        let mut path = PathSnapshots::new(None, Some(3), 64);
        let mut report = Report::default();
        path.reset(&mut model).unwrap();
        run_to_end(&mut model, &mut path);
        assert!(path.len() > 6);
        for round in 1..=4 {
            path.rewind(&mut model, 5, &[], false, &mut report).unwrap();
            assert_eq!(path.len(), 5);
            let (taken, restores) = match round {
                1 | 2 => (0, 0),
                // The third return replays and snapshots; the fourth
                // restores that snapshot instead of replaying.
                3 => (1, 0),
                _ => (1, 1),
            };
            assert_eq!((report.snapshots_taken, report.restores), (taken, restores));
            run_to_end(&mut model, &mut path);
        }
        assert_eq!(report.replayed_steps, 3 * 5);
        // Every return to 5 returned below 4 as well: the first rewind to
        // 4 (above the snapshot, so replayed from the start) snapshots.
        path.rewind(&mut model, 4, &[], false, &mut report).unwrap();
        assert_eq!(
            (report.snapshots_taken, report.replayed_steps),
            (2, 3 * 5 + 4)
        );
        // Off, nothing is ever snapshotted.
        let mut off = PathSnapshots::new(None, None, 64);
        let mut report = Report::default();
        off.reset(&mut model).unwrap();
        run_to_end(&mut model, &mut off);
        for _ in 0..5 {
            off.rewind(&mut model, 5, &[], false, &mut report).unwrap();
            run_to_end(&mut model, &mut off);
        }
        assert_eq!((report.snapshots_taken, report.restores), (0, 0));
    }
}
