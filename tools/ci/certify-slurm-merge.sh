#!/bin/bash
# tools/ci/certify-slurm-merge.sh — merges the shards written by certify-slurm.sh (see there).
#SBATCH --job-name=ropecheck-merge
#SBATCH --mem=1G
#SBATCH --time=00:05:00
set -euo pipefail
: "${ROPECHECK:=build/tools/ropecheck}"
: "${CERT_DIR:=certificate-parts}"
"$ROPECHECK" merge "$CERT_DIR"/part-*.json --out "${CERTIFICATE:-certificate.json}"
