//! What a command found, which `main` maps to the exit status (0 no bug,
//! 1 bug); errors are the third outcome (2) and travel as `Err`.

/// What a command found; errors are the third outcome and travel as `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    NoBug,
    Bug,
}
