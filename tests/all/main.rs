//! The end-to-end tests, one integration-test binary (as wasmtime's
//! tests/all): the whole stack on the guest programs of fixtures/guests,
//! which the `wasmrace-fixtures` dev-dependency builds for wasm32.
//!
//! - `cli`: the `wasmrace` binary (exit codes, reports, replay, bench);
//! - `fixtures`: the library on every guest program (one test per program,
//!   forced by `foreach_fixture!`), the host's exactness on real wasm, and
//!   the quick start's example.
//! - `recipes`: ARCHITECTURE.md's recipes against the code.
//!
//! Unit and crate-level tests stay in their crates.

mod analysis;
mod cli;
mod fixtures;
mod recipes;
