//! How an execution starts, as the strategy asked (`Start`): afresh
//! (from the program's initial state, or past the forced prefix:
//! `forced.rs`), resumed after a prefix of the previous execution (the
//! deepest snapshot on it, then a replay), or from a state saved earlier
//! (its snapshot, or its prefix replayed).

use super::saved::Taken;
use super::{ExploreError, Run};
use crate::observer::Observer;
use crate::program::Program;
use crate::strategy::Start;

impl<P: Program, O: Observer + ?Sized> Run<'_, P, O> {
    /// Gets the program to where the execution starts.
    pub(super) fn start(&mut self, start: Start) -> Result<(), ExploreError<P::Error>> {
        self.ahead = None;
        self.forward = self.forced.starts(matches!(start, Start::Fresh));
        match start {
            Start::Fresh => {
                if self.forward {
                    // The program is brought to the end of the prefix when
                    // the execution begins, after the observer's `begin`.
                    self.path.clear();
                } else {
                    (self.path.reset(self.program)).map_err(ExploreError::Program)?;
                }
                self.saved.truncate_path(0);
                self.fair.rewind(0);
                self.hashes.clear();
            }
            Start::Resume { prefix_len } => {
                if prefix_len > self.path.len() {
                    return Err(ExploreError::BadResume {
                        strategy: self.strategy.name().to_string(),
                        prefix_len,
                        len: self.path.len(),
                    });
                }
                self.path
                    .rewind(
                        self.program,
                        prefix_len,
                        &[],
                        self.in_place(),
                        &mut self.report,
                    )
                    .map_err(ExploreError::Program)?;
                self.saved.truncate_path(prefix_len);
                self.fair.rewind(prefix_len);
                self.hashes.truncate(prefix_len);
            }
            Start::Saved { id } => {
                let Some(mut taken) = self.saved.take(id) else {
                    return Err(ExploreError::UnknownSaved {
                        strategy: self.strategy.name().to_string(),
                        id,
                    });
                };
                self.start_saved(&mut taken)?;
                self.saved.adopt_path(&taken);
                let len = taken.prefix.len();
                self.fair.start_at(len, std::mem::take(&mut taken.fair));
                // The states before it, for cycles back to them (`saved.rs`).
                self.hashes = std::mem::take(&mut taken.hashes);
            }
        }
        Ok(())
    }

    /// Gets the program to a saved state: restores its snapshot when it has
    /// one, else replays its prefix from the deepest snapshot the prefix
    /// shares with the current path.
    fn start_saved(
        &mut self,
        taken: &mut Taken<P::Snapshot>,
    ) -> Result<(), ExploreError<P::Error>> {
        let prefix = &taken.prefix;
        match taken.snapshot.take() {
            Some(snap) => {
                self.program.restore(&snap).map_err(ExploreError::Program)?;
                self.report.restores += 1;
                self.report.saved_restored += 1;
                // Kept for backtracking below the saved state.
                self.path.start_at(prefix, snap);
            }
            None => {
                self.report.saved_replayed += 1;
                let lcp = self
                    .path
                    .decisions()
                    .iter()
                    .zip(prefix)
                    .take_while(|(a, (b, _))| *a == b)
                    .count();
                self.path
                    .rewind(
                        self.program,
                        lcp,
                        &prefix[lcp..],
                        self.in_place(),
                        &mut self.report,
                    )
                    .map_err(ExploreError::Program)?;
            }
        }
        Ok(())
    }
}
