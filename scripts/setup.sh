#!/usr/bin/env bash
# Installs what wasmrace needs beyond a Rust toolchain: the wasm32 targets
# (guests are built for them), Binaryen's wasm-opt (Asyncify, applied by
# the host at load time) and, for the tests only, Debian's headless-capable
# `chromium` (tests/all/cli/html.rs renders `--html` reports in it).
# Idempotent; safe to run on every CI run.
set -euo pipefail

# wasm32-unknown-unknown for SDK guests, wasm32-wasip1-threads for std
# guests (plain std threads, locks and atomics).
for target in wasm32-unknown-unknown wasm32-wasip1-threads; do
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        echo "setup: adding the $target target" >&2
        rustup target add "$target"
    fi
done

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
# The HTML report tests look for /usr/bin/chromium (or $WASMRACE_CHROMIUM);
# without it they skip their browser checks, saying so (CI, .ci/run, sets
# WASMRACE_REQUIRE_CHROMIUM, which makes that a failure).
if [ -z "${WASMRACE_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
    sudo=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
    if command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing chromium (the html report test renders in it)" >&2
        $sudo apt-get update -qq >/dev/null
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: no apt-get: install Chromium and set WASMRACE_CHROMIUM to its binary for the html report test" >&2
    fi
fi
echo "setup: $(wasm-opt --version), $(rustc --version)" >&2
