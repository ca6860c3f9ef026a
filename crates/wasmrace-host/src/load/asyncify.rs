//! Finding `wasm-opt` and running Binaryen's Asyncify over the suspending
//! hooks, through temporary files.

use super::{HOOK_MODULE, SUSPENDING_HOOKS};
use crate::error::{one_line, HostError};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `wasm-opt` binary to run: `configured`, else `$WASMRACE_WASM_OPT`,
/// else `wasm-opt` on `PATH`.
pub fn find_wasm_opt(configured: Option<&Path>) -> Result<PathBuf, HostError> {
    let candidate = configured
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("WASMRACE_WASM_OPT").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("wasm-opt"));
    match Command::new(&candidate).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(candidate),
        _ => Err(HostError::WasmOptMissing {
            tried: candidate.display().to_string(),
        }),
    }
}

/// Bytes above which a module is optimized at `-O1` after Asyncify
/// rather than `-O2`: SDK guests are tens of KiB, std guests hundreds.
const LARGE_MODULE: usize = 256 << 10;

/// Runs Binaryen's Asyncify over the suspending hooks.
pub fn asyncify(name: &str, bytes: &[u8], wasm_opt: &Path) -> Result<Vec<u8>, HostError> {
    let dir = tempdir()?;
    let input = dir.join("in.wasm");
    let output = dir.join("out.wasm");
    std::fs::write(&input, bytes).map_err(|source| HostError::Io {
        path: input.clone(),
        cause: source,
    })?;
    let imports: Vec<String> = SUSPENDING_HOOKS
        .iter()
        .map(|h| format!("{HOOK_MODULE}.{h}"))
        .collect();
    let result = Command::new(wasm_opt)
        .arg(&input)
        // The standard features our validator and wasmtime accept. Rust
        // modules declare theirs in a target_features section, which
        // wasm-opt reads; modules without one (hand-written, other
        // toolchains) would otherwise be held to MVP, which also forbids
        // the mutable globals we export ourselves.
        .args([
            "--enable-mutable-globals",
            "--enable-sign-ext",
            "--enable-nontrapping-float-to-int",
            "--enable-bulk-memory",
            "--enable-reference-types",
            "--enable-multivalue",
            "--enable-simd",
        ])
        .arg("--asyncify")
        .arg(format!("--pass-arg=asyncify-imports@{}", imports.join(",")))
        // Asyncify's output is large and slow until optimized; -O2 on a
        // large module (a std guest's harness: 600 KB in, 2 MB out of
        // Asyncify) takes 16 s, -O1 10 s for an output 1% larger.
        .arg(if bytes.len() > LARGE_MODULE {
            "-O1"
        } else {
            "-O2"
        })
        .arg("-o")
        .arg(&output)
        .output();
    let out = result.map_err(|_| HostError::WasmOptMissing {
        tried: wasm_opt.display().to_string(),
    })?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(HostError::WasmOpt {
            name: name.into(),
            message: one_line(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    let bytes = std::fs::read(&output).map_err(|source| HostError::Io {
        path: output.clone(),
        cause: source,
    });
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

/// Checks Asyncify's output as every pass's is checked
/// (`support::check_generated`), with one known case told apart: Binaryen
/// refines the type of a reference it spills into a local to a typed
/// (non-nullable) reference, a heap type that needs the GC proposal,
/// which wasmrace does not run. That is the module's use of reference
/// values across a hook meeting Binaryen, not a fault of the module or of
/// wasmrace: refused in one line that says how to build without it.
pub(crate) fn check_asyncified(name: &str, bytes: &[u8]) -> Result<(), HostError> {
    super::check_generated(name, "asyncify", bytes).map_err(|e| match e {
        HostError::Instrument { message, .. } if message.contains("heap types not supported") => {
            HostError::Instrument {
                name: name.into(),
                message: "Asyncify (Binaryen) types the module's reference values (`ref.func`, `ref.null`) as typed references, which need the GC proposal that wasmrace does not run; build without reference values in the code (`-C target-feature=-reference-types`)".into(),
            }
        }
        e => e,
    })
}

fn tempdir() -> Result<PathBuf, HostError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "wasmrace-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|source| HostError::Io {
        path: dir.clone(),
        cause: source,
    })?;
    Ok(dir)
}
