#!/bin/bash
# wasmrace check split into 16 partitions as a Slurm array job; task K
# (SLURM_ARRAY_TASK_ID, 1-based with --array=1-16) runs partition K/16.
# Submit, then merge once every task has ended:
#   jid=$(sbatch --parsable slurm-array.sh)
#   sbatch --dependency=afterany:$jid --wrap 'wasmrace merge parts/part-*.json > merged.txt'
#SBATCH --job-name=wasmrace-check
#SBATCH --array=1-16
#SBATCH --cpus-per-task=1
#SBATCH --time=12:00:00
#SBATCH --output=parts/slurm-%A_%a.log

set -u
K=$SLURM_ARRAY_TASK_ID
N=$SLURM_ARRAY_TASK_COUNT
mkdir -p parts
wasmrace check app.wasm --strategy pos --seed 42 --max-executions 16000000 \
    --partition "$K/$N" --json --schedule-dir "parts/schedules-$K" \
    > "parts/part-$K.json"
status=$?
# 0: no bug in this share, 1: a bug (merge reports it); 2: an error.
[ "$status" -le 1 ]
