#!/usr/bin/env bash
# The acceptance test of std guests (docs/std-guests.md, "Real crates"):
# published concurrency crates' own test suites, unmodified, under
# `cargo test --target wasm32-wasip1-threads` with wasmrace as the runner.
# Prints one line per crate: tests run, passed, failed, ignored, filtered,
# and the wall time. By hand (minutes per crate), not in CI.
#
#   scripts/accept-crates.sh [WORKDIR] [CRATE@VERSION ...]
#
# WASMRACE (default: target/debug/wasmrace of this checkout) is the binary;
# WASMRACE_CHECK_ARGS the `check` options of every test (default below: a
# few random executions each, as the suites run at full size). The crates'
# sources come from crates.io through cargo (a throwaway project depending
# on them), copied into WORKDIR.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/wasmrace-accept}
shift || true
crates=("$@")
if [ ${#crates[@]} = 0 ]; then
    crates=(thread_local@1.1.10 atomic_refcell@0.1.14 triomphe@0.1.17 once_cell@1.21.4
        crossbeam-utils@0.8.23 crossbeam-queue@0.3.14 lock_api@0.5.0 parking_lot@0.13.0)
fi
bin=${WASMRACE:-$here/target/debug/wasmrace}
export WASMRACE_CHECK_ARGS=${WASMRACE_CHECK_ARGS:---strategy random --max-executions 3 --max-steps 2000000 --jobs 1 --time-budget 60}
mkdir -p "$work/dl/src"
echo 'fn main() {}' > "$work/dl/src/main.rs"
{
    printf '[package]\nname = "dl"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n[dependencies]\n'
    for c in "${crates[@]}"; do printf '%s = "=%s"\n' "${c%@*}" "${c#*@}"; done
} > "$work/dl/Cargo.toml"
(cd "$work/dl" && cargo fetch -q)
registry=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -1)
echo "WASMRACE_CHECK_ARGS=$WASMRACE_CHECK_ARGS"
for c in "${crates[@]}"; do
    name=${c%@*} version=${c#*@}
    src="$work/$name"
    [ -d "$src" ] || cp -r "$registry/$name-$version" "$src"
    log="$work/$name.log"
    start=$(date +%s)
    set +e
    (cd "$src" && CARGO_TARGET_DIR="$work/target-$name" \
        CARGO_TARGET_WASM32_WASIP1_THREADS_RUNNER="$bin test" \
        cargo test -q --release --target wasm32-wasip1-threads --no-fail-fast --tests) > "$log" 2>&1
    set -e
    secs=$(($(date +%s) - start))
    grep -E '^test result:' "$log" | awk -v c="$c" -v s="$secs" '
        { p += $4; f += $6; i += $8; x += $12 }
        END { printf "%s: %d run, %d passed, %d failed, %d ignored, %d filtered out, %d s\n", c, p + f, p, f, i, x, s }'
done
