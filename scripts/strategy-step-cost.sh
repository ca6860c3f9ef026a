#!/usr/bin/env bash
#! What each strategy adds per step over random walk's whole step
#! (docs/performance.md, "Instruction counts"). For each strategy,
#! callgrind counts the exploration alone (`step_profile --strategy S`,
#! seeds 0..5, 200 executions each, `check`'s defaults for S, on the
#! `bench_two_by_ten` fixture) and divides by the steps the example prints.
#! Needs valgrind. Usage: scripts/strategy-step-cost.sh [strategy...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p wasmrace-host --example step_profile
bin=target/release/examples/step_profile
out=$(mktemp -d)
strategies=("$@")
if [ ${#strategies[@]} -eq 0 ]; then
  strategies=(random pct dfs portfolio basic-pos pos pos-star procrastination racefuzzer dpor ses ss)
fi
base=""
printf '%-16s %14s %8s %10s %s\n' strategy instructions steps per-step over-random
for s in random "${strategies[@]}"; do
  [ "$s" = random ] && [ -n "$base" ] && continue
  valgrind --tool=callgrind --callgrind-out-file="$out/$s" \
    --toggle-collect='*step_profile::explore*' "$bin" --strategy "$s" >"$out/$s.txt" 2>"$out/$s.err"
  ir=$(grep -m1 -o 'I *refs: *[0-9,]*' "$out/$s.err" | tr -dc 0-9)
  steps=$(grep -o '[0-9]* steps' "$out/$s.txt" | head -1 | tr -dc 0-9)
  per=$((ir / steps))
  [ -z "$base" ] && base=$per
  pct=$(awk -v p="$per" -v b="$base" 'BEGIN { printf "%+.1f%%", (p - b) * 100 / b }')
  printf '%-16s %14s %8s %10s %s\n' "$s" "$ir" "$steps" "$per" "$pct"
done
