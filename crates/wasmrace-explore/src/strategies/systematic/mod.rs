//! Systematic strategies: they enumerate a space (within their bounds) and
//! say when it is exhausted. [`Dfs`] (Concuerror, ICST 2013), [`Dpor`]
//! (optimal and source DPOR, POPL 2014 / JACM 2017, and its TruSt-style
//! mode [`dpor::trust`], `dpor --dpor trust`, POPL 2022) and [`Ses`] (stratified
//! exhaustive search with a delaying explorer, FSE 2015).

pub mod dfs;
pub mod dpor;
pub mod ses;

pub use dfs::{Dfs, DfsOptions};
pub use dpor::{Dpor, DporMode};
pub use ses::{Ses, SesOptions};
