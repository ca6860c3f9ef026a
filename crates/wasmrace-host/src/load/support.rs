//! What the host can run, in words the module's author can act on: the
//! WebAssembly features its passes, `wasm-opt` and wasmtime all handle
//! (WebAssembly 2.0: a module using a later proposal is named as such,
//! never left to fail as invalid wasm the host generated), the module's
//! declared memory and tables against the host's bounds (never wasmtime's
//! pooling-allocator terms), and the check that every instrumentation pass
//! generated valid wasm.

use crate::config::HostConfig;
use crate::error::HostError;
use wasmparser::WasmFeatures;

/// The features every stage of loading handles: walrus, Asyncify (the
/// `--enable-*` flags `asyncify.rs` passes) and the engine. Rust's
/// `wasm32-unknown-unknown` target emits no others by default.
pub(crate) const SUPPORTED: WasmFeatures = WasmFeatures::WASM2;

/// Largest table a module may declare (and grow to), in elements; the
/// instance pool is sized to the module's table up to this.
pub(crate) const MAX_TABLE_ELEMENTS: u64 = 1 << 20;

/// Most tables a module may define; the instance pool is sized to the
/// module's count up to this.
pub(crate) const MAX_TABLES: u32 = 16;

/// The pool's table size when the module's own is smaller (wasmtime's
/// default).
const POOL_TABLE_ELEMENTS: u64 = 20_000;

/// A proposal beyond WebAssembly 2.0, as its users know it.
struct Proposal {
    features: WasmFeatures,
    /// What it is, in a phrase.
    what: &'static str,
    /// The rustc target feature that turns it on, if there is one.
    flag: Option<&'static str>,
}

const PROPOSALS: &[Proposal] = &[
    Proposal {
        features: WasmFeatures::THREADS.union(WasmFeatures::SHARED_EVERYTHING_THREADS),
        what: "threads (shared memory, atomics)",
        flag: Some("atomics"),
    },
    Proposal {
        features: WasmFeatures::EXCEPTIONS.union(WasmFeatures::LEGACY_EXCEPTIONS),
        what: "exception handling",
        flag: Some("exception-handling"),
    },
    Proposal {
        features: WasmFeatures::MEMORY64,
        what: "64-bit memory (memory64)",
        flag: None,
    },
    Proposal {
        features: WasmFeatures::MULTI_MEMORY,
        what: "multiple memories",
        flag: Some("multimemory"),
    },
    Proposal {
        features: WasmFeatures::TAIL_CALL,
        what: "tail calls",
        flag: Some("tail-call"),
    },
    Proposal {
        features: WasmFeatures::RELAXED_SIMD,
        what: "relaxed SIMD",
        flag: Some("relaxed-simd"),
    },
    Proposal {
        features: WasmFeatures::EXTENDED_CONST,
        what: "extended constant expressions",
        flag: Some("extended-const"),
    },
    Proposal {
        features: WasmFeatures::GC.union(WasmFeatures::FUNCTION_REFERENCES),
        what: "garbage collection (typed function references)",
        flag: None,
    },
    Proposal {
        features: WasmFeatures::WIDE_ARITHMETIC,
        what: "wide arithmetic",
        flag: Some("wide-arithmetic"),
    },
    Proposal {
        features: WasmFeatures::CUSTOM_PAGE_SIZES,
        what: "custom page sizes",
        flag: None,
    },
    Proposal {
        features: WasmFeatures::STACK_SWITCHING,
        what: "stack switching",
        flag: None,
    },
];

fn validates(features: WasmFeatures, bytes: &[u8]) -> bool {
    wasmparser::Validator::new_with_features(features)
        .validate_all(bytes)
        .is_ok()
}

/// Why `bytes`, which failed validation as WebAssembly 2.0 with `error`,
/// cannot be loaded: the proposals it needs when it is valid with them
/// (each one it cannot do without), else the validator's own message.
pub(crate) fn unsupported(
    name: &str,
    bytes: &[u8],
    error: wasmparser::BinaryReaderError,
) -> HostError {
    let all = PROPOSALS.iter().fold(SUPPORTED, |f, p| f.union(p.features));
    if !validates(all, bytes) {
        return HostError::Invalid {
            name: name.into(),
            message: error.message().to_string(),
            offset: error.offset(),
        };
    }
    let needed: Vec<&Proposal> = PROPOSALS
        .iter()
        .filter(|p| !validates(all.difference(p.features), bytes))
        .collect();
    let what: Vec<&str> = needed.iter().map(|p| p.what).collect();
    let flags: Vec<String> = needed
        .iter()
        .filter_map(|p| p.flag.map(|f| format!("`-C target-feature=-{f}`")))
        .collect();
    let advice = if flags.is_empty() {
        "build for `wasm32-unknown-unknown` with its default features".to_string()
    } else {
        format!("build without them ({})", flags.join(", "))
    };
    HostError::Unsupported {
        name: name.into(),
        // A module needing two proposals together (shared memory without
        // atomics is still threads) names at least one.
        proposals: if what.is_empty() {
            "a WebAssembly proposal".into()
        } else {
            what.join(", ")
        },
        advice,
    }
}

/// Checks what an instrumentation `pass` generated: it must validate as
/// the input did. A failure is wasmrace's bug, said so in one line, never
/// left for wasmtime to report as a translation error.
pub(crate) fn check_generated(name: &str, pass: &str, bytes: &[u8]) -> Result<(), HostError> {
    wasmparser::Validator::new_with_features(SUPPORTED)
        .validate_all(bytes)
        .map(|_| ())
        .map_err(|e| HostError::Instrument {
            name: name.into(),
            message: format!(
                "the `{pass}` pass generated invalid wasm ({} at byte offset {}); this is a wasmrace bug, please report it with the module",
                e.message(),
                e.offset()
            ),
        })
}

/// The memory and tables a module declares, from its own sections.
#[derive(Clone, Copy, Debug, Default)]
pub struct Declared {
    /// Initial size of the memory, in wasm pages.
    pub memory_initial: u64,
    /// The memory's declared maximum, in wasm pages.
    pub memory_maximum: Option<u64>,
    /// Tables the module defines (imports are refused by the audit).
    pub tables: u32,
    /// The largest initial size of a defined table, in elements.
    pub table_elements: u64,
}

impl Declared {
    /// The table size the instance pool must hold for this module.
    pub(crate) fn pool_table_elements(&self) -> usize {
        self.table_elements.max(POOL_TABLE_ELEMENTS) as usize
    }

    /// The tables per instance the pool must hold for this module.
    pub(crate) fn pool_tables(&self) -> u32 {
        self.tables.max(1)
    }
}

/// Checks the module's declared memory and tables against the host's
/// bounds, naming the module's declaration and the flag to change.
pub(crate) fn check_declared(
    name: &str,
    d: &Declared,
    config: &HostConfig,
) -> Result<(), HostError> {
    let limit_mb = config.max_memory_bytes >> 20;
    let initial_bytes = d.memory_initial.saturating_mul(65536);
    if initial_bytes > config.max_memory_bytes {
        return Err(HostError::ModuleMemory {
            name: name.into(),
            message: format!(
                "declares an initial memory of `{}` pages (`{}` MiB), more than the guest memory limit of `{limit_mb}` MiB; raise --max-memory-mb",
                d.memory_initial,
                initial_bytes >> 20
            ),
        });
    }
    let slot_pages = config.slot_bytes() / 65536;
    if let Some(max) = d.memory_maximum {
        if max < d.memory_initial + slot_pages {
            return Err(HostError::ModuleMemory {
                name: name.into(),
                message: format!(
                    "declares a memory maximum of `{max}` pages (`{}` KiB), but the host needs `{slot_pages}` pages above its initial `{}` for the main thread's Asyncify buffer and stack (--asyncify-buffer-kib, --thread-stack-kib), and as many per spawned thread; link it with a larger maximum (`-C link-arg=--max-memory=<bytes>`) or none",
                    max * 64,
                    d.memory_initial
                ),
            });
        }
    }
    if d.tables > MAX_TABLES {
        return Err(HostError::ModuleTables {
            name: name.into(),
            message: format!(
                "defines `{}` tables, more than the host's limit of `{MAX_TABLES}` (a Rust module has one)",
                d.tables
            ),
        });
    }
    if d.table_elements > MAX_TABLE_ELEMENTS {
        return Err(HostError::ModuleTables {
            name: name.into(),
            message: format!(
                "declares a table of `{}` elements, more than the host's limit of `{MAX_TABLE_ELEMENTS}`",
                d.table_elements
            ),
        });
    }
    Ok(())
}

/// Rewords an error of wasmtime's instance pool (a resource the checks
/// above do not cover) without its terms: what the module needs and that
/// the host's instances cannot hold it.
pub(crate) fn pool_message(message: &str) -> Option<String> {
    if !message.contains("pooling allocator") {
        return None;
    }
    // wasmtime's detail is the last clause: "... exceeds the limit of N".
    let detail = message.rsplit(": ").next().unwrap_or(message);
    Some(format!(
        "the module needs more than a wasmrace instance holds ({detail})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wasm(text: &str) -> Vec<u8> {
        wat::parse_str(text).unwrap()
    }

    fn why(text: &str) -> String {
        let bytes = wasm(text);
        let Err(e) = wasmparser::Validator::new_with_features(SUPPORTED).validate_all(&bytes)
        else {
            panic!("{text} is WebAssembly 2.0");
        };
        unsupported("m.wasm", &bytes, e).to_string()
    }

    #[test]
    fn a_later_proposal_is_named_with_the_flag_that_drops_it() {
        let shared = why("(module (memory 1 2 shared))");
        assert!(
            shared.contains("threads (shared memory, atomics)"),
            "{shared}"
        );
        assert!(shared.contains("`-C target-feature=-atomics`"), "{shared}");
        let tail = why("(module (func $f return_call $f))");
        assert!(tail.contains("tail calls"), "{tail}");
        let both = why("(module (tag) (memory i64 1) (func (throw 0)))");
        assert!(
            both.contains("exception handling, 64-bit memory (memory64)"),
            "{both}"
        );
        let two = why("(module (memory 1) (memory 1))");
        assert!(two.contains("multiple memories"), "{two}");
    }

    #[test]
    fn invalid_wasm_keeps_the_validators_message() {
        let bytes = b"\0asm\x01\0\0\0\x01\x05".to_vec();
        let Err(e) = wasmparser::Validator::new_with_features(SUPPORTED).validate_all(&bytes)
        else {
            panic!("valid");
        };
        let m = unsupported("m.wasm", &bytes, e).to_string();
        assert!(m.starts_with("`m.wasm` is not valid wasm"), "{m}");
    }

    #[test]
    fn generated_wasm_that_does_not_validate_is_a_bug_said_in_one_line() {
        assert!(check_generated("m", "p", &wasm("(module)")).is_ok());
        let bad = check_generated("m", "asyncify", b"\0asm\x01\0\0\0\x0a")
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("the `asyncify` pass generated invalid wasm"),
            "{bad}"
        );
        assert!(!bad.contains('\n'), "{bad}");
    }

    #[test]
    fn declared_memory_and_tables_are_checked_against_the_flags() {
        let c = HostConfig::default();
        let ok = Declared {
            memory_initial: 17,
            memory_maximum: None,
            tables: 1,
            table_elements: 100,
        };
        assert!(check_declared("m", &ok, &c).is_ok());
        let huge = Declared {
            memory_initial: 60_000,
            ..ok
        };
        let m = check_declared("m", &huge, &c).unwrap_err().to_string();
        assert!(m.contains("initial memory of `60000` pages"), "{m}");
        assert!(m.contains("raise --max-memory-mb"), "{m}");
        let tight = Declared {
            memory_maximum: Some(18),
            ..ok
        };
        let m = check_declared("m", &tight, &c).unwrap_err().to_string();
        assert!(m.contains("declares a memory maximum of `18` pages"), "{m}");
        assert!(!m.contains("raise --max-memory-mb"), "{m}");
        let roomy = Declared {
            memory_maximum: Some(19),
            ..ok
        };
        assert!(check_declared("m", &roomy, &c).is_ok());
        let tables = Declared { tables: 2, ..ok };
        assert!(check_declared("m", &tables, &c).is_ok());
        let tables = Declared {
            tables: MAX_TABLES + 1,
            ..ok
        };
        assert!(check_declared("m", &tables, &c).is_err());
        let big = Declared {
            table_elements: MAX_TABLE_ELEMENTS + 1,
            ..ok
        };
        assert!(check_declared("m", &big, &c).is_err());
    }

    #[test]
    fn pool_errors_lose_their_jargon() {
        let m = pool_message("module table does not fit in pooling allocator requirements: table index 0 has a minimum element size of 100000 which exceeds the limit of 20000").unwrap();
        assert!(!m.contains("pooling"), "{m}");
        assert!(m.contains("exceeds the limit of 20000"), "{m}");
        assert_eq!(pool_message("something else"), None);
    }
}
