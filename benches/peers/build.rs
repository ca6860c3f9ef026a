//! Builds the guest crate in guest/ for wasm32-unknown-unknown (a nested
//! `cargo build` of its own workspace, as fixtures/build.rs does) and tells
//! the runner where the .wasm is (`PEERS_GUEST_WASM`) and which versions of
//! loom, shuttle and wasmtime Cargo.lock pins (`PEERS_VERSIONS`) and which
//! rustc builds it (`PEERS_RUSTC`).

use std::env;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};

const TARGET: &str = "wasm32-unknown-unknown";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("benches/peers sits two levels below the repository root")
        .to_path_buf();
    let guest = manifest_dir.join("guest");
    // Not the outer build's target dir: a nested cargo would wait forever on
    // the lock the outer one holds.
    let target_dir = repo.join("target").join("peers-guest");

    for p in [
        guest.join("Cargo.toml"),
        guest.join("Cargo.lock"),
        guest.join("src"),
        guest.join(".cargo"),
        repo.join("guest-sdk").join("Cargo.toml"),
        repo.join("guest-sdk").join("src"),
        repo.join("guest-sdk").join("macros").join("src"),
        manifest_dir.join("Cargo.lock"),
    ] {
        // A path that does not exist would make cargo rerun every time.
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }

    build_guest(&guest, &target_dir);
    let wasm = target_dir
        .join(TARGET)
        .join("release")
        .join("peers_guest.wasm");
    if !wasm.is_file() {
        fail(&format!("building guest/ produced no {}", wasm.display()));
    }
    println!("cargo:rustc-env=PEERS_GUEST_WASM={}", wasm.display());
    println!(
        "cargo:rustc-env=PEERS_VERSIONS={}",
        versions(&manifest_dir.join("Cargo.lock"))
    );
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc ?".into());
    println!("cargo:rustc-env=PEERS_RUSTC={rustc_version}");
}

fn build_guest(guest: &Path, target_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(guest)
        .args(["build", "--release", "--target", TARGET])
        .arg("--manifest-path")
        .arg(guest.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    // The outer build's flags, wrappers, profile overrides and jobserver are
    // for the host and must not reach a wasm build of another workspace.
    for (key, _) in env::vars_os() {
        if leaks_into_nested_build(&key) {
            cmd.env_remove(&key);
        }
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo: {e}")));
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
        fail(&format!(
            "building benches/peers/guest for {TARGET} failed (errors above; \
             is the target installed? `rustup target add {TARGET}`)"
        ));
    }
}

fn leaks_into_nested_build(key: &OsStr) -> bool {
    let Some(key) = key.to_str() else {
        return false;
    };
    const EXACT: &[&str] = &[
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "CARGO_INCREMENTAL",
        "CARGO_PRIMARY_PACKAGE",
    ];
    const PREFIXES: &[&str] = &["CARGO_TARGET_", "CARGO_BUILD_", "CARGO_PROFILE_", "__CARGO"];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// `loom 0.7.2, shuttle 0.9.9, wasmtime 48.0.8`, read from Cargo.lock.
fn versions(lock: &Path) -> String {
    let text = fs::read_to_string(lock).unwrap_or_default();
    let mut out = Vec::new();
    for name in ["loom", "shuttle", "wasmtime"] {
        let needle = format!("name = \"{name}\"\nversion = \"");
        let version = text
            .find(&needle)
            .map(|i| &text[i + needle.len()..])
            .and_then(|rest| rest.split('"').next())
            .unwrap_or("?");
        out.push(format!("{name} {version}"));
    }
    out.join(", ")
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    exit(1)
}
