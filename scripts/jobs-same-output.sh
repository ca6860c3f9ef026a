#!/usr/bin/env bash
# Checks that `wasmrace check --jobs N` prints exactly the `--jobs 1`
# document (`--json`, the `elapsed_ms` fields and the saved-state counters
# aside) for dfs sharing its tree, with and without `--state-cache`, and
# for ses running its rounds side by side, on every test of every built
# fixture: dfs unbounded and with a preemption bound, ses without and
# with a delay bound, with budgets that cut most runs and budgets that do
# not. The CLI tests check a few of these runs; this walks them all
# (about 8 minutes on 2 cores).
#
# Usage: scripts/jobs-same-output.sh [JOBS...]   (default: 2 3)
# Environment:
#   WASMRACE  the binary (default target/release/wasmrace; build it with
#             `cargo build --release -p wasmrace-cli`)
#   GUESTS    the built fixtures (default target/guests/wasm32-unknown-unknown/release,
#             written by `cargo test -p wasmrace-tests`' build script)
#
# Prints each run that differs, then the count; exits 1 if any did.
set -euo pipefail
WASMRACE=${WASMRACE:-target/release/wasmrace}
GUESTS=${GUESTS:-target/guests/wasm32-unknown-unknown/release}
JOBS=("${@:-2 3}")
read -r -a JOBS <<< "${JOBS[*]}"

# The document without its timing fields, keys sorted.
timeless() {
    python3 -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        v.pop("elapsed_ms", None)
        # How states were saved: ses threads replay and save none.
        v.pop("saved_states", None)
        for x in v.values(): strip(x)
    elif isinstance(v, list):
        for x in v: strip(x)
doc = json.load(sys.stdin)
strip(doc)
print(json.dumps(doc, sort_keys=True))'
}

run() {
    timeout 300 "$WASMRACE" check "$@" --json 2>/dev/null | timeless || true
}

compared=0
differing=0

# Runs `check` with the given arguments on one thread and on each of JOBS,
# counting the runs that differ.
compare() {
    local one
    one=$(run "$@" --jobs 1)
    for jobs in "${JOBS[@]}"; do
        compared=$((compared + 1))
        if [ "$(run "$@" --jobs "$jobs")" != "$one" ]; then
            differing=$((differing + 1))
            echo "differs: $* --jobs $jobs"
        fi
    done
}

for module in "$GUESTS"/*.wasm; do
    name=$(basename "$module" .wasm)
    # Modules that exist to fail loading or to have nothing to explore.
    case $name in hostile|stack_overflow|world_hello|sdk_smoke) continue ;; esac
    for bound in "" "--delay-bound 2"; do
        for max in 300 3000; do
            # shellcheck disable=SC2086 # the options are words
            compare "$module" --strategy ses $bound --max-executions "$max"
        done
    done
    for cache in "" "--state-cache"; do
        for bound in "--unbounded" "--preemption-bound 1"; do
            for max in 300 3000; do
                # shellcheck disable=SC2086 # the options are words
                compare "$module" --strategy dfs $cache $bound --max-executions "$max"
            done
        done
    done
done
echo "compared $compared runs with --jobs 1: $differing differ"
[ "$differing" -eq 0 ]
