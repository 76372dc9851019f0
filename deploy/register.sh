#!/bin/sh
# Register the work pool, the deployments of deploy/prefect.yaml and (with no arguments) the
# automations of deploy/automations/ against PREFECT_API_URL, with the PRDIST_* values of the
# environment: the one-shot job of deploy/compose.yaml.
#   sh deploy/register.sh [DEPLOYMENT...]      (default: every deployment, and the automations)
set -eu
cd "$(dirname "$0")/.."
prefect work-pool create prdist-process --type process --overwrite
if [ "$#" -eq 0 ]; then
  python deploy/automations.py   # created, or updated by name: running this again adds none
  set -- nightly on-release on-labels compare synthesize
fi
for name in "$@"; do
  prefect deploy --prefect-file deploy/prefect.yaml --name "$name"
done
