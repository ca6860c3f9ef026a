//! Systematic strategies: they enumerate a space (within their bounds) and
//! say when it is exhausted. [`Dfs`] (Concuerror, ICST 2013) and [`Ses`]
//! (stratified exhaustive search with a delaying explorer, FSE 2015).

pub mod dfs;
pub mod ses;

pub use dfs::{Dfs, DfsOptions};
pub use ses::{Ses, SesOptions};
