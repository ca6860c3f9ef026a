#!/usr/bin/env bash
# Installs what wasmrace needs beyond a Rust toolchain: the wasm32 target
# (guests are built for it) and Binaryen's wasm-opt (Asyncify, applied by
# the host at load time). Idempotent; safe to run on every CI run.
set -euo pipefail

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    echo "setup: adding the wasm32-unknown-unknown target" >&2
    rustup target add wasm32-unknown-unknown
fi

if ! command -v wasm-opt >/dev/null 2>&1; then
    echo "setup: installing binaryen (wasm-opt)" >&2
    sudo=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
    if command -v apt-get >/dev/null 2>&1; then
        $sudo apt-get update -qq >/dev/null
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binaryen >/dev/null
    elif command -v brew >/dev/null 2>&1; then
        brew install binaryen
    else
        echo "setup: cannot install binaryen automatically; install it so that \`wasm-opt\` is on PATH" >&2
        exit 2
    fi
fi
echo "setup: $(wasm-opt --version), $(rustc --version)" >&2
