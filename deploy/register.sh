#!/bin/sh
# Register the work pool and the deployments of deploy/prefect.yaml against PREFECT_API_URL, with
# the PRDIST_* values of the environment: the one-shot job of deploy/compose.yaml.
#   sh deploy/register.sh [DEPLOYMENT...]      (default: every deployment)
set -eu
cd "$(dirname "$0")/.."
prefect work-pool create prdist-process --type process --overwrite
[ "$#" -gt 0 ] || set -- nightly on-release on-labels compare synthesize
for name in "$@"; do
  prefect deploy --prefect-file deploy/prefect.yaml --name "$name"
done
