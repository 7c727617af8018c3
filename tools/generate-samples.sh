#!/usr/bin/env bash
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

# Write etc/memagg/memagg.conf.sample, etc/memagg/nova.conf.memagg.sample
# (nova.conf's [memagg], for nova-scheduler's filter and weigher) and
# etc/memagg/policy.yaml.sample from the code, with the generator files
# beside them. The samples are build output (see .gitignore): regenerate
# them rather than edit them. Also api-ref/openapi.json, the API's OpenAPI
# document, which is kept in the tree for the API reference (a unit test
# fails when it is stale).
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
"${bin}oslo-config-generator" \
    --config-file etc/memagg/nova-memagg-config-generator.conf
"${bin}oslopolicy-sample-generator" \
    --config-file etc/memagg/memagg-policy-generator.conf
"${bin}python3" -m memagg.cmd.openapi >api-ref/openapi.json
echo "wrote etc/memagg/memagg.conf.sample, etc/memagg/nova.conf.memagg.sample," \
     "etc/memagg/policy.yaml.sample and api-ref/openapi.json"
