//! The built-in delaying explorers by name (`rr`, `rtc`, `prr`): a plain
//! [`ExplorerKind`] for options and command lines, and [`BuiltinExplorer`],
//! the explorer it builds. Kept apart from the interface (`explorer.rs`) so
//! that the explorers depend on the interface and this factory on them,
//! with no loop.

use super::explorer::DelayingExplorer;
use super::prr::ProbabilisticRoundRobin;
use super::rr::RoundRobin;
use super::rtc::RunToCompletion;
use crate::program::{StepInfo, ThreadView};
use wasmrace_trace::Tid;

/// Which built-in explorer to use: a plain value (`Copy`, `Eq`) for
/// options and command lines; [`build`](Self::build) makes the explorer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExplorerKind {
    /// `rr`: [`RoundRobin`].
    RoundRobin,
    /// `rtc`: [`RunToCompletion`].
    RunToCompletion,
    /// `prr`: [`ProbabilisticRoundRobin`].
    ProbabilisticRoundRobin,
}

impl ExplorerKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [ExplorerKind; 3] = [
        ExplorerKind::RoundRobin,
        ExplorerKind::RunToCompletion,
        ExplorerKind::ProbabilisticRoundRobin,
    ];

    /// `rr`, `rtc` or `prr`.
    pub fn name(self) -> &'static str {
        match self {
            ExplorerKind::RoundRobin => "rr",
            ExplorerKind::RunToCompletion => "rtc",
            ExplorerKind::ProbabilisticRoundRobin => "prr",
        }
    }

    /// The kind called `name` (`rr`, `rtc` or `prr`), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The explorer; `seed` seeds PRR's random insertions.
    pub fn build(self, seed: u64) -> BuiltinExplorer {
        match self {
            ExplorerKind::RoundRobin => BuiltinExplorer::RoundRobin(RoundRobin::new()),
            ExplorerKind::RunToCompletion => {
                BuiltinExplorer::RunToCompletion(RunToCompletion::new())
            }
            ExplorerKind::ProbabilisticRoundRobin => {
                BuiltinExplorer::ProbabilisticRoundRobin(ProbabilisticRoundRobin::new(seed))
            }
        }
    }
}

/// The built-in explorers, selectable by name (`rr`, `rtc`, `prr`). Not
/// boxed: SES and SS clone the explorer at every pending branch or step,
/// and boxing would add an allocation to each clone.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum BuiltinExplorer {
    /// `rr`.
    RoundRobin(RoundRobin),
    /// `rtc`.
    RunToCompletion(RunToCompletion),
    /// `prr`.
    ProbabilisticRoundRobin(ProbabilisticRoundRobin),
}

impl BuiltinExplorer {
    /// The names `from_name` accepts, in the order help texts list them.
    pub const NAMES: &'static [&'static str] = &["rr", "rtc", "prr"];

    /// The explorer called `name`; `seed` seeds PRR's random insertions.
    pub fn from_name(name: &str, seed: u64) -> Option<Self> {
        ExplorerKind::from_name(name).map(|k| k.build(seed))
    }

    fn inner(&self) -> &dyn DelayingExplorer {
        match self {
            BuiltinExplorer::RoundRobin(e) => e,
            BuiltinExplorer::RunToCompletion(e) => e,
            BuiltinExplorer::ProbabilisticRoundRobin(e) => e,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn DelayingExplorer {
        match self {
            BuiltinExplorer::RoundRobin(e) => e,
            BuiltinExplorer::RunToCompletion(e) => e,
            BuiltinExplorer::ProbabilisticRoundRobin(e) => e,
        }
    }
}

impl DelayingExplorer for BuiltinExplorer {
    fn name(&self) -> &str {
        self.inner().name()
    }
    fn reseed(&mut self, seed: u64) {
        self.inner_mut().reseed(seed)
    }
    fn is_random(&self) -> bool {
        self.inner().is_random()
    }
    fn start(&mut self, thread: Tid) {
        self.inner_mut().start(thread)
    }
    fn finish(&mut self, thread: Tid) {
        self.inner_mut().finish(thread)
    }
    fn step(&mut self, event: &StepInfo, threads: &[ThreadView]) {
        self.inner_mut().step(event, threads)
    }
    fn next(&self, threads: &[ThreadView]) -> Tid {
        self.inner().next(threads)
    }
    fn delay(&mut self, threads: &[ThreadView]) {
        self.inner_mut().delay(threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_explorers_are_selected_by_name() {
        for name in BuiltinExplorer::NAMES {
            let e = BuiltinExplorer::from_name(name, 3).unwrap();
            assert_eq!(e.name(), *name);
        }
        assert!(BuiltinExplorer::from_name("fifo", 0).is_none());
        let names: Vec<&str> = ExplorerKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, BuiltinExplorer::NAMES);
    }
}
