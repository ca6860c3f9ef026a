//! The on-disk cache of instrumented (`<key>.wasm`) and compiled
//! (`<key>.cwasm`) modules, keyed by the input module and the
//! instrumentation version. Entries are read, never mapped: a mapped file
//! rewritten by another process would crash the host. The cache is an
//! optimization: an entry that cannot be read or used is rebuilt, a write
//! that fails is ignored.

use super::{asyncify, export_asyncify_globals, export_globals, find_wasm_opt};
use crate::config::HostConfig;
use crate::error::{one_line, HostError};
use std::path::Path;
use wasmtime::{Engine, Module};

/// Bump when instrumentation changes, to invalidate cached modules. Adding
/// a suspending hook needs no bump: a module importing it was refused by the
/// import audit (which runs before the cache is consulted), so no cached
/// entry was instrumented without it, and Asyncify ignores listed imports a
/// module does not have.
const INSTRUMENTATION_VERSION: u32 = 11;

/// Cache key of an instrumented module: the input, our instrumentation
/// version and the options that shape the output.
pub fn cache_key(bytes: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(bytes);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(&INSTRUMENTATION_VERSION.to_le_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// Writes `bytes` to `path` atomically (temp file + rename), so a
/// concurrent reader never sees half a file. Failures are ignored: the
/// cache is an optimization.
pub fn cache_write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The compiled module of `bytes` (already audited) and whether it came
/// from the cache: the cached compiled module when wasmtime accepts it,
/// else the cached instrumented module compiled, else `bytes` instrumented
/// (walrus, Asyncify, walrus) and compiled. What was built is written back.
pub(crate) fn compiled_module(
    name: &str,
    bytes: &[u8],
    engine: &Engine,
    config: &HostConfig,
) -> Result<(Module, bool), HostError> {
    let key = cache_key(bytes);
    let cache = config.cache_dir.as_deref();
    if let Some(m) = cache.and_then(|dir| read_compiled(engine, dir, &key)) {
        return Ok((m, true));
    }
    let cached = cache.and_then(|d| std::fs::read(d.join(format!("{key}.wasm"))).ok());
    // A cached instrumented module that no longer compiles (a corrupt
    // entry) is instrumented again.
    let compiled_cached = cached.and_then(|b| Module::new(engine, &b).ok());
    let m = match compiled_cached {
        Some(m) => m,
        None => {
            let b = instrument(name, bytes, config)?;
            if let Some(d) = cache {
                cache_write(&d.join(format!("{key}.wasm")), &b);
            }
            Module::new(engine, &b).map_err(|e| HostError::Compile {
                name: name.into(),
                message: one_line(&format!("{e:#}")),
            })?
        }
    };
    if let Some(d) = cache {
        if let Ok(ser) = m.serialize() {
            cache_write(&d.join(format!("{key}.cwasm")), &ser);
        }
    }
    Ok((m, false))
}

/// The cached compiled module `<key>.cwasm` in `dir`, if there is one
/// this engine accepts.
fn read_compiled(engine: &Engine, dir: &Path, key: &str) -> Option<Module> {
    // Read the file rather than `deserialize_file`, which maps it: a mapped
    // cache file rewritten by another process would crash this one with
    // SIGBUS.
    let ser = std::fs::read(dir.join(format!("{key}.cwasm"))).ok()?;
    // SAFETY: the bytes come from this host's own cache directory; wasmtime
    // checks they were made by a compatible engine, and anything it rejects
    // is recompiled.
    unsafe { Module::deserialize(engine, &ser) }.ok()
}

/// The instrumentation pipeline: export the mutable globals (walrus), run
/// Asyncify (wasm-opt), then export Asyncify's globals and add the
/// trampolines (walrus).
fn instrument(name: &str, bytes: &[u8], config: &HostConfig) -> Result<Vec<u8>, HostError> {
    let wasm_opt = find_wasm_opt(config.wasm_opt.as_deref())?;
    let exported = export_globals(name, bytes)?;
    let b = asyncify(name, &exported, &wasm_opt)?;
    export_asyncify_globals(name, &b)
}
