//! The on-disk cache of instrumented (`<key>.wasm`) and compiled
//! (`<key>.cwasm`) modules, keyed by the input module and the
//! instrumentation version. Every entry is one file, a header then the
//! payload; the header holds a blake3 digest of the full key, the entry's
//! kind and the payload, checked before the payload is used, so a
//! corrupt, truncated or half-written file, or the valid entry of another
//! module or kind, is a miss that is rebuilt and replaced. Entries are
//! read, never mapped: a mapped file rewritten by another process would
//! crash the host. The cache is an optimization: an entry that cannot be
//! read or used is rebuilt, a write that fails is ignored.

use super::{
    asyncify, check_asyncified, check_generated, export_asyncify_globals, export_globals,
    find_wasm_opt, headroom, track_dirty_pages,
};
use crate::config::HostConfig;
use crate::error::{one_line, HostError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::{Engine, Module};

/// Bump when instrumentation changes, to invalidate cached modules. Adding
/// a suspending hook needs no bump: a module importing it was refused by the
/// import audit (which runs before the cache is consulted), so no cached
/// entry was instrumented without it, and Asyncify ignores listed imports a
/// module does not have. 12: entries carry a checked header ([`MAGIC`]).
/// 16: the dirty map marks 1 KiB blocks.
const INSTRUMENTATION_VERSION: u32 = 18;

/// First bytes of every entry: names the file format, so a file of the
/// unchecked format (or anything else) is never taken for an entry.
const MAGIC: &[u8; 8] = b"wrcache1";

/// Largest entry file read: far above any compiled module of the largest
/// input `--max-module-mb` allows by default; anything larger is a miss.
const MAX_ENTRY_BYTES: u64 = 4 << 30;

/// Header length: [`MAGIC`], then the 32-byte digest of [`entry_digest`].
const HEADER_LEN: usize = MAGIC.len() + blake3::OUT_LEN;

/// What an entry holds; part of its digest, so that an instrumented module
/// is never read as a compiled one or the other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `<key>.wasm`: the instrumented module, compiled with `Module::new`.
    Instrumented,
    /// `<key>.cwasm`: wasmtime's serialized compiled module.
    Compiled,
}

impl Kind {
    fn extension(self) -> &'static str {
        match self {
            Kind::Instrumented => "wasm",
            Kind::Compiled => "cwasm",
        }
    }
}

/// The cache key of an input module: a blake3 digest of the input, our
/// version and the instrumentation version. Its first 128 bits (hex) name
/// the entry's files; all 256 go into every entry's digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CacheKey([u8; blake3::OUT_LEN]);

impl CacheKey {
    /// The key of the (audited) input module `bytes`.
    fn of(bytes: &[u8]) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(bytes);
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(&INSTRUMENTATION_VERSION.to_le_bytes());
        CacheKey(*h.finalize().as_bytes())
    }

    /// The key of what is built from this key's module with `extra` (the
    /// compiled module depends on the room `headroom` adds, which depends
    /// on the configuration).
    fn with(&self, extra: &[u8]) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(&self.0);
        h.update(extra);
        CacheKey(*h.finalize().as_bytes())
    }

    /// The file of this key's entry of `kind` in `dir`.
    fn path(&self, dir: &Path, kind: Kind) -> PathBuf {
        let hex = blake3::Hash::from(self.0).to_hex();
        dir.join(format!("{}.{}", &hex[..32], kind.extension()))
    }
}

/// The digest an entry's header holds: of the full key, the kind and the
/// payload, so that a payload is accepted only under the key and kind it
/// was written for.
fn entry_digest(key: &CacheKey, kind: Kind, payload: &[u8]) -> [u8; blake3::OUT_LEN] {
    let mut h = blake3::Hasher::new();
    h.update(&key.0);
    h.update(kind.extension().as_bytes());
    h.update(&(payload.len() as u64).to_le_bytes());
    h.update(payload);
    *h.finalize().as_bytes()
}

/// The whole file of an entry: header, then `payload`.
fn encode_entry(key: &CacheKey, kind: Kind, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&entry_digest(key, kind, payload));
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry file, if the file is a whole entry written for
/// `key` and `kind`: `None` for a short file, another format, or a digest
/// that does not match (a flipped byte, a cut, another module's entry).
fn decode_entry<'a>(key: &CacheKey, kind: Kind, file: &'a [u8]) -> Option<&'a [u8]> {
    let rest = file.strip_prefix(MAGIC.as_slice())?;
    if rest.len() < blake3::OUT_LEN {
        return None;
    }
    let (digest, payload) = rest.split_at(blake3::OUT_LEN);
    (digest == entry_digest(key, kind, payload).as_slice()).then_some(payload)
}

/// Reads the entry of `key` and `kind` in `dir`, returning its payload only
/// when its header checks.
fn cache_read(dir: &Path, key: &CacheKey, kind: Kind) -> Option<Vec<u8>> {
    // Only a regular file, and not without end: an entry that is a link to
    // `/dev/zero` or a FIFO would otherwise exhaust memory or block.
    let file = super::read_module(&key.path(dir, kind), MAX_ENTRY_BYTES).ok()?;
    let len = decode_entry(key, kind, &file)?.len();
    // The payload is the file's tail: drop the header in place, no second
    // buffer (a compiled module is megabytes).
    let mut file = file;
    file.drain(..file.len() - len);
    Some(file)
}

/// Writes the entry of `key` and `kind` holding `payload` to `dir`,
/// atomically (one file, temp file + rename), so a concurrent reader sees
/// the old entry or the new one, never half of one; a crash mid-write
/// leaves a temp file no reader opens. The temp file's name is unique to
/// the process and the call, so two writers of one entry (two processes,
/// or two threads loading one module) never write into one temp file.
/// Failures are ignored: the cache is an optimization.
fn cache_write(dir: &Path, key: &CacheKey, kind: Kind, payload: &[u8]) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let path = key.path(dir, kind);
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let ext = format!("{}.tmp{}-{n}", kind.extension(), std::process::id());
    let tmp = path.with_extension(ext);
    let file = encode_entry(key, kind, payload);
    if std::fs::write(&tmp, file).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The compiled module of `bytes` (already audited) and whether it came
/// from the cache: the cached compiled module when its entry checks and
/// wasmtime accepts it, else the cached instrumented module (when its entry
/// checks) compiled, else `bytes` instrumented (walrus, Asyncify, walrus)
/// and compiled. What was built is written back, replacing a bad entry.
pub(crate) fn compiled_module(
    name: &str,
    bytes: &[u8],
    engine: &Engine,
    config: &HostConfig,
) -> Result<(Module, bool), HostError> {
    let key = CacheKey::of(bytes);
    let room = headroom::room_pages(config);
    let compiled_key =
        key.with(&[room.to_le_bytes(), config.max_memory_bytes.to_le_bytes()].concat());
    let cache = config.cache_dir.as_deref();
    if let Some(m) = cache.and_then(|dir| read_compiled(engine, dir, &compiled_key)) {
        return Ok((m, true));
    }
    let with_room = |b: &[u8]| headroom::reserve_room(name, b, room, config.max_memory_bytes);
    let cached = cache.and_then(|d| cache_read(d, &key, Kind::Instrumented));
    // The entry checked, so the module is the one we wrote; it may still
    // fail to compile (an engine that refuses what an older one took): then
    // it is instrumented again.
    let compiled_cached = cached
        .and_then(|b| with_room(&b).ok())
        .and_then(|b| Module::new(engine, &b).ok());
    let m = match compiled_cached {
        Some(m) => m,
        None => {
            let b = instrument(name, bytes, config)?;
            if let Some(d) = cache {
                cache_write(d, &key, Kind::Instrumented, &b);
            }
            let b = with_room(&b)?;
            Module::new(engine, &b).map_err(|e| compile_error(name, e))?
        }
    };
    if let Some(d) = cache {
        if let Ok(ser) = m.serialize() {
            cache_write(d, &compiled_key, Kind::Compiled, &ser);
        }
    }
    Ok((m, false))
}

/// wasmtime's refusal of a module, in one line; the instance pool's
/// limits are said without its terms.
pub(crate) fn compile_error(name: &str, e: wasmtime::Error) -> HostError {
    let message = one_line(&format!("{e:#}"));
    HostError::Compile {
        name: name.into(),
        message: super::pool_message(&message).unwrap_or(message),
    }
}

/// The cached compiled module of `key` in `dir`, if its entry checks and
/// this engine accepts it.
fn read_compiled(engine: &Engine, dir: &Path, key: &CacheKey) -> Option<Module> {
    // Read the file rather than `deserialize_file`, which maps it: a mapped
    // cache file rewritten by another process would crash this one with
    // SIGBUS.
    let ser = cache_read(dir, key, Kind::Compiled)?;
    // SAFETY: `deserialize` needs bytes that `Module::serialize` produced,
    // unchanged. `cache_read` returned these only because the header's
    // digest matched a blake3 of this key, the compiled kind and these exact
    // bytes; the header is only ever written by `cache_write`, right after
    // `serialize` gave the bytes for this key. So a flipped byte, a cut, a
    // half-written file, an unchecked entry of the older format, an
    // instrumented module or the compiled module of another input all fail
    // the check and never get here (barring a blake3 collision). wasmtime
    // itself refuses bytes made by an incompatible engine or version, and
    // anything refused is recompiled. What the digest cannot stop is a
    // writer who forges entries on purpose: the cache directory is trusted
    // like the user's own files (whoever can write it can write those).
    unsafe { Module::deserialize(engine, &ser) }.ok()
}

/// The instrumentation pipeline: export the mutable globals and mark
/// written pages (walrus), run Asyncify (wasm-opt), then export Asyncify's globals and add the
/// trampolines (walrus).
fn instrument(name: &str, bytes: &[u8], config: &HostConfig) -> Result<Vec<u8>, HostError> {
    let wasm_opt = find_wasm_opt(config.wasm_opt.as_deref())?;
    // Each pass's output is validated before the next reads it, so that
    // wasm the host generated wrong is reported as such, naming the pass,
    // and never reaches wasmtime (whose "translation error" would blame
    // the user's module).
    let exported = export_globals(name, bytes)?;
    check_generated(name, "export globals", &exported)?;
    let tracked = track_dirty_pages(name, &exported)?;
    check_generated(name, "dirty pages", &tracked)?;
    let b = asyncify(name, &tracked, &wasm_opt)?;
    check_asyncified(name, &b)?;
    let out = export_asyncify_globals(name, &b)?;
    check_generated(name, "trampolines", &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> CacheKey {
        CacheKey::of(s.as_bytes())
    }

    #[test]
    fn an_entry_reads_back_under_its_own_key_and_kind_only() {
        let (a, b) = (key("a"), key("b"));
        let file = encode_entry(&a, Kind::Compiled, b"payload");
        assert_eq!(
            decode_entry(&a, Kind::Compiled, &file),
            Some(&b"payload"[..])
        );
        assert_eq!(decode_entry(&b, Kind::Compiled, &file), None, "another key");
        assert_eq!(
            decode_entry(&a, Kind::Instrumented, &file),
            None,
            "another kind"
        );
        let empty = encode_entry(&a, Kind::Instrumented, b"");
        assert_eq!(decode_entry(&a, Kind::Instrumented, &empty), Some(&b""[..]));
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_refused() {
        let k = key("module");
        let payload: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        let file = encode_entry(&k, Kind::Compiled, &payload);
        for i in 0..file.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = file.clone();
                bad[i] ^= bit;
                assert_eq!(decode_entry(&k, Kind::Compiled, &bad), None, "byte {i}");
            }
        }
        for len in 0..file.len() {
            assert_eq!(
                decode_entry(&k, Kind::Compiled, &file[..len]),
                None,
                "cut {len}"
            );
        }
        let mut longer = file.clone();
        longer.push(0);
        assert_eq!(decode_entry(&k, Kind::Compiled, &longer), None, "appended");
        // An entry of the unchecked format (a bare payload) is not one.
        assert_eq!(decode_entry(&k, Kind::Compiled, &payload), None);
    }

    /// Found by the fuzz harness (`wasmrace-fuzz --kind cache`): an entry
    /// that was a link to `/dev/zero` was read until memory ran out.
    #[cfg(unix)]
    #[test]
    fn an_entry_that_is_not_a_regular_file_is_a_miss_and_is_replaced() {
        let dir = std::env::temp_dir().join(format!("wasmrace-cache-dev-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let k = key("device");
        let path = k.path(&dir, Kind::Compiled);
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert_eq!(cache_read(&dir, &k, Kind::Compiled), None);
        cache_write(&dir, &k, Kind::Compiled, b"module");
        assert_eq!(
            cache_read(&dir, &k, Kind::Compiled).as_deref(),
            Some(&b"module"[..])
        );
        let bad = k.path(&dir, Kind::Instrumented);
        std::fs::create_dir(&bad).unwrap();
        assert_eq!(
            cache_read(&dir, &k, Kind::Instrumented),
            None,
            "a directory"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_written_entry_replaces_the_old_file_and_reads_back() {
        let dir = std::env::temp_dir().join(format!("wasmrace-cache-unit-{}", std::process::id()));
        let k = key("written");
        let path = k.path(&dir, Kind::Instrumented);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, b"garbage").unwrap();
        assert_eq!(cache_read(&dir, &k, Kind::Instrumented), None);
        cache_write(&dir, &k, Kind::Instrumented, b"module");
        assert_eq!(
            cache_read(&dir, &k, Kind::Instrumented).as_deref(),
            Some(&b"module"[..])
        );
        assert_eq!(cache_read(&dir, &k, Kind::Compiled), None, "no such entry");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
