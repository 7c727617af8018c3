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

# Run memagg's whole test suite: unit and functional tests, against the real
# RabbitMQ, MariaDB, PostgreSQL and Keystone that tools/setup.sh provides.
#
# Runs tools/setup.sh first (seconds when all is in place) unless
# MEMAGG_SKIP_SETUP=1. Extra arguments go to pytest, e.g.
#   ./tools/run-tests.sh memagg/tests/unit
#   ./tools/run-tests.sh -m 'not slow'
set -euo pipefail

cd "$(dirname "$0")/.."
[ "${MEMAGG_SKIP_SETUP:-0}" = 1 ] || ./tools/setup.sh

rc=0
.venv/bin/pytest -ra --durations=10 "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    # pytest's "no tests ran" would otherwise look like a quiet success.
    echo "run-tests: ERROR: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
