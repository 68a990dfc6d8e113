#!/usr/bin/env bash
# tools/run_seeds.sh [N] [BUILD_DIR] — run the property suite with N different seeds (default 20)
# and count failures: a correct kernel must never fail, whatever the seed.
#   ROPECHECK_SEED=k selects the seed of run k; RC_PARAMS="max_success=..." deepens every run.
set -uo pipefail
n=${1:-20}
build=${2:-build}
failed_runs=0
for seed in $(seq 1 "$n"); do
  start=$(date +%s)
  if out=$(ROPECHECK_SEED=$seed ctest --test-dir "$build" -L property -j2 2>&1); then
    status=ok
  else
    status=FAILED
    failed_runs=$((failed_runs + 1))
    echo "$out" | grep -E "Failed|\*\*\*" | head -20
  fi
  summary=$(echo "$out" | grep -E "tests passed" | head -1)
  echo "seed $seed: $status ($summary, $(( $(date +%s) - start )) s)"
done
echo "$((n - failed_runs)) passed, $failed_runs failed"
[[ $failed_runs -eq 0 ]]
