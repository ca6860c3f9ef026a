#!/usr/bin/env bash
# What the data-race detector costs: executions per second of the same
# exploration with `--data-races fail` (the default) and `--data-races off`,
# run side by side (alternating, so that the VM's noise hits both alike),
# for SDK fixtures and std guests. Prints a Markdown table of the medians,
# with the range over the runs, and the ratio of the medians.
#
#   scripts/race-overhead.sh [RUNS]      (default 5; needs the fixtures
#                                         built: cargo test -p wasmrace-fixtures)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
cargo build -q -p wasmrace-cli
# The CLI cargo just built: under CARGO_TARGET_DIR when it is set.
w=${CARGO_TARGET_DIR:-target}/debug/wasmrace
sdk=target/guests/wasm32-unknown-unknown/release
std=target/std-guests/wasm32-wasip1-threads/release
# module test executions (tests without a bug, so that every run counts
# the same executions; each run lasts a few tenths of a second, as runs
# of a few hundredths had the timer's millisecond and the VM's hiccups in
# their ratio)
cases=(
  "$sdk/mutex_counter.wasm mutex_counter_3 20000"
  "$sdk/readers.wasm readers_3 20000"
  "$sdk/work_steal_queue.wasm work_steal_queue_fixed 10000"
  "$sdk/data_races.wasm allocation_churn 20000"
  "$std/std_mutex.wasm main 2000"
  "$std/std_sync_tour.wasm main 1000"
)
rate() { # module test n races -> executions per second
  "$w" check "$1" --test "$2" --strategy random --seed 0 --max-executions "$3" \
    --data-races "$4" --json 2>/dev/null |
    python3 -c 'import json,sys
d=json.load(sys.stdin); t=d["tests"][0]
print(t["executions"] / max(t["elapsed_ms"], 0.001) * 1000)'
}
echo "| module | test | executions | fail: exec/s (range) | off: exec/s (range) | off / fail |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  set -- $c
  [ -f "$1" ] || { echo "missing $1 (build the fixtures)" >&2; exit 2; }
  on=(); off=()
  rate "$1" "$2" "$3" fail >/dev/null # warm the module cache
  rate "$1" "$2" "$3" off >/dev/null
  for _ in $(seq "$runs"); do
    on+=("$(rate "$1" "$2" "$3" fail)")
    off+=("$(rate "$1" "$2" "$3" off)")
  done
  python3 - "$(basename "$1")" "$2" "$3" "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
m, t, n, on, off = sys.argv[1:]
on = [float(x) for x in on.split()]; off = [float(x) for x in off.split()]
mo, mf = statistics.median(on), statistics.median(off)
print(f"| {m} | {t} | {n} | {mo:,.0f} ({min(on):,.0f}–{max(on):,.0f}) | "
      f"{mf:,.0f} ({min(off):,.0f}–{max(off):,.0f}) | {mf / mo:.2f}x |")
PY
done
