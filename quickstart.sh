#!/usr/bin/env bash
# The README's first command: set up, build wasmrace and the example guest
# (examples/lost-update, with plain cargo), and check it. The example has a
# bug on purpose, so `wasmrace check` exits 1 and prints the interleaving;
# this script exits 0 when that is what happened.
set -euo pipefail
cd "$(dirname "$0")"

scripts/setup.sh
echo "quickstart: building wasmrace (the first build compiles wasmtime: a few minutes)" >&2
cargo build -q -p wasmrace-cli
echo "quickstart: building the example guest with cargo" >&2
cargo build -q --release --target wasm32-unknown-unknown --manifest-path examples/lost-update/Cargo.toml

wasm=examples/lost-update/target/wasm32-unknown-unknown/release/lost_update.wasm
echo "quickstart: target/debug/wasmrace check $wasm" >&2
echo
set +e
target/debug/wasmrace check "$wasm" --test lost_update --schedule-out target/lost_update.schedule.json
code=$?
set -e
if [ "$code" = 1 ]; then
    echo
    echo "quickstart: wasmrace found the example's bug (exit code 1), as expected." >&2
    exit 0
fi
echo "quickstart: unexpected exit code $code from wasmrace check" >&2
exit "$code"
