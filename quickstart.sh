#!/usr/bin/env bash
# The README's first command: set up, build wasmrace and the example guest
# (examples/lost-update, with plain cargo), and check it; then check the
# std example (examples/std-counter, plain std Rust) with `cargo test` and
# wasmrace as its runner. Both have a bug on purpose, so both fail and
# print the interleaving; this script exits 0 when that is what happened.
set -euo pipefail
cd "$(dirname "$0")"

scripts/setup.sh
# Not -q: the first build compiles wasmtime (about 10 minutes on 2 cores),
# and cargo's progress shows it is not stuck.
echo "quickstart: building wasmrace (the first build compiles wasmtime: about 10 minutes on 2 cores)" >&2
cargo build -p wasmrace-cli
echo "quickstart: building the example guest with cargo" >&2
cargo build -q --release --target wasm32-unknown-unknown --manifest-path examples/lost-update/Cargo.toml

wasm=examples/lost-update/target/wasm32-unknown-unknown/release/lost_update.wasm
echo "quickstart: target/debug/wasmrace check $wasm" >&2
echo
set +e
target/debug/wasmrace check "$wasm" --test lost_update
code=$?
set -e
if [ "$code" != 1 ]; then
    echo "quickstart: unexpected exit code $code from wasmrace check" >&2
    exit "$code"
fi
echo
echo "quickstart: wasmrace found the example's bug (exit code 1), as expected." >&2

# The same bug in plain std Rust (examples/std-counter: std threads and
# atomics, an ordinary #[test]), checked by `cargo test` with wasmrace as
# the runner of the wasm32-wasip1-threads target.
echo "quickstart: cargo test --target wasm32-wasip1-threads in examples/std-counter, wasmrace as the runner" >&2
echo
set +e
(cd examples/std-counter &&
    CARGO_TARGET_WASM32_WASIP1_THREADS_RUNNER="$PWD/../../target/debug/wasmrace test" \
        cargo test -q --target wasm32-wasip1-threads)
code=$?
set -e
if [ "$code" = 0 ]; then
    echo "quickstart: wasmrace test found no bug in examples/std-counter, which has one" >&2
    exit 1
fi
echo
echo "quickstart: wasmrace found the bug in unmodified std code too (cargo test failed, as expected)." >&2
