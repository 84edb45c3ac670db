#!/usr/bin/env bash
# Runs both stress files side by side RUNS times in a row (default 10) while a CPU hog keeps every core busy,
# and stops at the first failure. A stress run must end by its own work and pass on a loaded machine.
# Usage: make stress-loop [RUNS=10]
set -uo pipefail
cd "$(dirname "$0")/../.."
runs="${RUNS:-10}"
cores="$(nproc)"
hogs=()
for _ in $(seq "$cores"); do
    python3 -c "while True: pass" &
    hogs+=("$!")
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
for run in $(seq "$runs"); do
    started=$SECONDS
    if ! .venv/bin/pytest -n 2 --dist loadfile \
        tests/reliability/test_stress.py tests/reliability/test_stress_faults.py; then
        echo "run $run of $runs failed after $((SECONDS - started)) s"
        exit 1
    fi
    echo "run $run of $runs passed in $((SECONDS - started)) s, with $cores CPU hogs"
done
echo "$runs of $runs runs passed"
