//! Which DPOR algorithm runs (`--dpor`): a leaf of its own, so that the
//! options every strategy declares (`strategies/descriptor.rs`) can name it
//! without importing the strategy, which imports them.

/// Which DPOR algorithm runs (`--dpor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DporMode {
    /// Wakeup trees: each trace once, no sleep-set-blocked execution.
    #[default]
    Optimal,
    /// Source sets and sleep sets: may run sleep-set-blocked executions.
    Source,
    /// TruSt over access sets ([`Trust`](super::trust::Trust), a strategy
    /// of its own that the registry builds for this mode): jobs that
    /// depend on nothing but themselves.
    Trust,
}

impl DporMode {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            DporMode::Optimal => "optimal",
            DporMode::Source => "source",
            DporMode::Trust => "trust",
        }
    }
}
