#!/bin/sh
# Register the work pool and the deployments of deploy/prefect.yaml against PREFECT_API_URL, with
# the PRDIST_* values of the environment: the one-shot job of deploy/compose.yaml.
#   sh deploy/register.sh [DEPLOYMENT...]      (default: every deployment, then the automations)
# The name `automations` creates (or replaces) those of deploy/automations/ (deploy/automations.py;
# the notifying ones when PRDIST_NOTIFY_BLOCK names a notification block).
set -eu
cd "$(dirname "$0")/.."
prefect work-pool create prdist-process --type process --overwrite
[ "$#" -gt 0 ] || set -- nightly on-release on-labels compare synthesize automations
for name in "$@"; do
  if [ "$name" = automations ]; then python deploy/automations.py; continue; fi
  prefect deploy --prefect-file deploy/prefect.yaml --name "$name"
done
