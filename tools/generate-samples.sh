#!/usr/bin/env bash
# Write etc/memagg/memagg.conf.sample and etc/memagg/policy.yaml.sample from
# the code, with the generator files beside them. The samples are build
# output (see .gitignore): regenerate them rather than edit them.
set -euo pipefail

cd "$(dirname "$0")/.."
if [ -x .venv/bin/oslo-config-generator ]; then
    bin=.venv/bin/
elif command -v oslo-config-generator >/dev/null; then
    bin=
else
    echo "generate-samples: oslo-config-generator not found; run" \
         "tools/setup.sh (or pip install -e .) first" >&2
    exit 1
fi

"${bin}oslo-config-generator" \
    --config-file etc/memagg/memagg-config-generator.conf
"${bin}oslopolicy-sample-generator" \
    --config-file etc/memagg/memagg-policy-generator.conf
echo "wrote etc/memagg/memagg.conf.sample and etc/memagg/policy.yaml.sample"
