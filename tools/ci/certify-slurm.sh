#!/bin/bash
# tools/ci/certify-slurm.sh — one shard of a certificate as a Slurm job array task.
#   jid=$(sbatch --parsable --array=1-4 tools/ci/certify-slurm.sh)
#   sbatch --dependency=afterok:$jid tools/ci/certify-slurm-merge.sh
# Each task certifies slice $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT; the merge job combines
# them into certificate.json. Run by tests/certify/ci_examples_test.sh (with a small MAX_POSITION).
#SBATCH --job-name=ropecheck-certify
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
#SBATCH --time=00:30:00
set -euo pipefail
: "${ROPECHECK:=build/tools/ropecheck}"
: "${MAX_POSITION:=2147483647}"
: "${CERTIFY_ARGS:=--preset llama3-8b --impl hf_float}"
: "${CERT_DIR:=certificate-parts}"
mkdir -p "$CERT_DIR"
# shellcheck disable=SC2086  # CERTIFY_ARGS is a list of flags
"$ROPECHECK" certify $CERTIFY_ARGS --max-position "$MAX_POSITION" --threads "${SLURM_CPUS_PER_TASK:-0}" \
  --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" --quiet \
  --out "$CERT_DIR/part-${SLURM_ARRAY_TASK_ID}-of-${SLURM_ARRAY_TASK_COUNT}.json"
