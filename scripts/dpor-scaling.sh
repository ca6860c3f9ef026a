#!/usr/bin/env bash
# Concuerror's DPOR scalability rows (readers, lastzero, indexer,
# filesystem), timed with `wasmrace check --strategy dpor --json`: the
# table in docs/performance.md, "DPOR on Concuerror's scalability
# benchmarks", comes from this script.
#
# Usage: scripts/dpor-scaling.sh [TEST...]
#   (default: readers_10..15, lastzero_8..12, indexer_12..15, filesystem_14..18)
# Environment:
#   WASMRACE  the binary (default target/release/wasmrace; build it with
#             `cargo build --release -p wasmrace-cli`)
#   GUESTS    the built fixtures (default target/guests/wasm32-unknown-unknown/release,
#             written by `cargo test -p wasmrace-tests`' build script)
#   RUNS      runs per row (default 3); the table gives the median and the range
#
# Prints one markdown row per test: traces, executions, and the seconds of
# exploration as the JSON report gives them (`elapsed_ms`, loading the
# module excluded; the module cache is used). Every run must exhaust the
# space and report the same counts, or the script stops.
set -euo pipefail

WASMRACE=${WASMRACE:-target/release/wasmrace}
GUESTS=${GUESTS:-target/guests/wasm32-unknown-unknown/release}
RUNS=${RUNS:-3}

if [ "$#" -eq 0 ]; then
    set -- readers_10 readers_11 readers_12 readers_13 readers_14 readers_15 \
        lastzero_8 lastzero_9 lastzero_10 lastzero_11 lastzero_12 \
        indexer_12 indexer_13 indexer_14 indexer_15 \
        filesystem_14 filesystem_16 filesystem_18
fi

# 12345 -> 12,345
thousands() { printf "%s" "$1" | rev | sed 's/[0-9]\{3\}/&,/g; s/,$//' | rev; }
seconds() { awk -v ms="$1" 'BEGIN { printf "%.2f", ms / 1000 }'; }

echo "| test | traces | executions | seconds, median of $RUNS (range) |"
echo "|---|---:|---:|---|"
for test in "$@"; do
    program=${test%_*}
    times=()
    counts=""
    for _ in $(seq "$RUNS"); do
        json=$("$WASMRACE" check "$GUESTS/$program.wasm" --test "$test" \
            --strategy dpor --max-executions 100000000 --json)
        row=$(jq -r '.tests[0] | [.exhausted, .strategy_stats.stats.traces,
            .executions, .elapsed_ms, (.bug != null)] | @tsv' <<<"$json")
        read -r exhausted traces executions ms bug <<<"$row"
        if [ "$exhausted" != true ] || [ "$bug" != false ]; then
            echo "error: \`$test\` did not exhaust without a bug" >&2
            exit 1
        fi
        if [ -n "$counts" ] && [ "$counts" != "$traces $executions" ]; then
            echo "error: \`$test\` explored $counts, then $traces $executions" >&2
            exit 1
        fi
        counts="$traces $executions"
        times+=("$ms")
    done
    sorted=($(printf "%s\n" "${times[@]}" | sort -n))
    median=${sorted[$((RUNS / 2))]}
    if [ $((RUNS % 2)) -eq 0 ]; then
        median=$(((sorted[RUNS / 2 - 1] + sorted[RUNS / 2]) / 2))
    fi
    read -r traces executions <<<"$counts"
    echo "| $test | $(thousands "$traces") | $(thousands "$executions") |" \
        "$(seconds "$median") ($(seconds "${sorted[0]}")–$(seconds "${sorted[$((RUNS - 1))]}")) |"
done
