#!/bin/bash
# tests/certify/ci_examples_test.sh ROPECHECK SOURCE_DIR WORK_DIR — runs the commands of the CI
# examples (tools/ci/certify-github-actions.yml's run: lines, tools/ci/certify-slurm*.sh) with a small
# MAX_POSITION, and checks that each merged certificate is byte-identical to one unsharded run.
set -euo pipefail
ropecheck=$(readlink -f "$1"); src=$(readlink -f "$2"); work=$3
rm -rf "$work"; mkdir -p "$work"; cd "$work"
export MAX_POSITION=5000 CERTIFY_ARGS="--preset llama3-8b --impl hf_float --impl bf16_positions"

# The reference: one unsharded run (exit 1: bf16_positions fails; the certificate is written).
set +e; "$ropecheck" certify $CERTIFY_ARGS --max-position $MAX_POSITION --quiet --out unsharded.json >/dev/null; rc=$?; set -e
[ "$rc" = 1 ] || { echo "unsharded certify: exit $rc, expected 1"; exit 1; }

# GitHub Actions: the matrix job's and the merge job's run: lines, as the runner would execute them.
mkdir -p gha/ropecheck/build/tools; ln -s "$ropecheck" gha/ropecheck/build/tools/ropecheck
yml="$src/tools/ci/certify-github-actions.yml"
certify_line=$(grep -E '^ +run: .*ropecheck certify ' "$yml" | sed -E 's/^ +run: //')
merge_line=$(grep -E '^ +run: .*ropecheck merge ' "$yml" | sed -E 's/^ +run: //')
[ -n "$certify_line" ] && [ -n "$merge_line" ] || { echo "run: lines not found in $yml"; exit 1; }
shards=$(grep -E '^ +shard: \[' "$yml" | sed -E 's/.*\[(.*)\].*/\1/; s/,/ /g')
(cd gha
 for k in $shards; do bash -c "${certify_line//'${{ matrix.shard }}'/$k}" >/dev/null; done
 set +e; bash -c "$merge_line" >/dev/null; rc=$?; set -e
 [ "$rc" = 1 ] || { echo "GitHub merge: exit $rc, expected 1"; exit 1; })
cmp gha/certificate.json unsharded.json
echo "GitHub Actions matrix ($shards): merged certificate identical to the unsharded run"

# Slurm: an array of 3 tasks (the task ids Slurm would set), then the dependent merge job.
mkdir -p slurm/build/tools; ln -s "$ropecheck" slurm/build/tools/ropecheck
(cd slurm
 for k in 1 2 3; do SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=3 SLURM_CPUS_PER_TASK=2 bash "$src/tools/ci/certify-slurm.sh"; done
 set +e; bash "$src/tools/ci/certify-slurm-merge.sh" >/dev/null; rc=$?; set -e
 [ "$rc" = 1 ] || { echo "Slurm merge: exit $rc, expected 1"; exit 1; })
cmp slurm/certificate.json unsharded.json
echo "Slurm array (3 tasks): merged certificate identical to the unsharded run"
