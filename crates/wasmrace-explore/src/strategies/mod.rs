//! The built-in strategies, one per file.
