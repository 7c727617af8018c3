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
# Two lanes run side by side (memagg/tests/lanes.py): the host lane runs the
# tests marked `host` (DAMON, host swap, every libvirtd...) one at a time;
# the parallel lane runs the others under pytest-xdist, a file per worker.
# Their output is prefixed [host] and [parallel]; at the end come each
# lane's and tier's wall time, the slowest tests and one closing count
# (memagg/tests/budget.py), after a check that the run left nothing behind
# (memagg/tests/leftovers.py): no process, listener or host setting.
#
# Runs tools/setup.sh first (seconds when all is in place) unless
# MEMAGG_SKIP_SETUP=1. Extra arguments go to pytest in both lanes, e.g.
#   ./tools/run-tests.sh memagg/tests/unit
#   ./tools/run-tests.sh -m 'not slow'
# MEMAGG_TEST_WORKERS sets the parallel lane's workers (default 2).
set -euo pipefail

cd "$(dirname "$0")/.."
[ "${MEMAGG_SKIP_SETUP:-0}" = 1 ] || ./tools/setup.sh

# Python's bytecode caches kept: the suite starts hundreds of Python
# processes (services, tools, workers) that import memagg, and pytest
# rewrites every test module per worker; without caches each one compiles
# them again (the unit tier's collection: 6 s instead of 10 s).
unset PYTHONDONTWRITEBYTECODE

# Short paths: tests put unix sockets under their tmp_path (108 bytes at
# most), and each lane needs a basetemp of its own, as pytest prunes old
# numbered ones.
run=$(mktemp -d /tmp/memagg-run.XXXXXX)
echo "run-tests: records, logs and temporary files in $run"
.venv/bin/python -m memagg.tests.leftovers snapshot "$run/before.json"

# run_lane LANE NICENESS PYTEST-ARGS...: one lane, at that CPU priority,
# its lines prefixed with its name; LANE.wall gets its start, stop and
# pytest's exit status.
run_lane() {
    local lane=$1 niceness=$2 start rc
    shift 2
    start=$(date +%s.%N)
    set +e
    nice -n "$niceness" .venv/bin/pytest -ra --lane "$lane" \
        --record "$run/$lane.jsonl" --basetemp "$run/$lane" "$@" 2>&1 \
        | sed -u "s/^/[$lane] /"
    rc=${PIPESTATUS[0]}
    set -e
    echo "$start $(date +%s.%N) $rc" >"$run/$lane.wall"
}

# The machine's CPU counters around the lanes: the budget's busy share.
head -1 /proc/stat >"$run/cpu.before"
run_lane host 0 -p no:xdist "$@" &
host=$!
# The parallel lane at a lower CPU priority: the host lane's timed tests
# (TCG guests, host reclaim's promotion rates) get the cores first, and the
# parallel lane the rest (the host lane alone leaves about half of them
# idle). Guests' QEMUs are libvirtd's children and keep its priority.
run_lane parallel 5 -n "${MEMAGG_TEST_WORKERS:-2}" --dist loadfile "$@" &
parallel=$!
wait "$host" "$parallel"
head -1 /proc/stat >"$run/cpu.after"

rc=0
if ! .venv/bin/python -m memagg.tests.leftovers check "$run/before.json"; then
    echo "run-tests: ERROR: the run left the above behind" >&2
    rc=1
fi
for lane in host parallel; do
    read -r _ _ status <"$run/$lane.wall"
    # 5 is pytest's "no tests ran": a lane may select none of the arguments'.
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then
        echo "run-tests: ERROR: the $lane lane failed (pytest exit $status)" >&2
        rc=1
    fi
done
# The budget ends with the closing count of both lanes together.
.venv/bin/python -m memagg.tests.budget "$run" | tee "$run/budget.txt"
if ! grep -qE '^total: [1-9][0-9]* passed|^total: [0-9]+ passed, [1-9]' \
        "$run/budget.txt"; then
    # pytest's "no tests ran" would otherwise look like a quiet success.
    echo "run-tests: ERROR: pytest ran no tests" >&2
    rc=1
fi
exit "$rc"
