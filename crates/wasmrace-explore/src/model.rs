//! A small pure-Rust program language for unit-testing strategies.
