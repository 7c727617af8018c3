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

"""The suite's two lanes, as a pytest plug-in (pytest.ini loads it).

A test marked ``host`` touches something the whole host shares (DAMON,
host swap and zswap, memory compaction, every libvirtd, a compute loop over
all of qemu:///system's domains, a benchmark's timing): it runs in the host
lane, one test at a time. Every other test runs in the parallel lane, under
pytest-xdist. tools/run-tests.sh runs the two lanes side by side, each with
``--lane`` and ``--record FILE``; memagg.tests.budget reads the records.
"""
import json
import os
import time

import pytest

LANES = ('host', 'parallel')


def pytest_addoption(parser):
    group = parser.getgroup('memagg lanes')
    group.addoption('--lane', choices=LANES,
                    help='run only the tests of this lane: host (marked '
                         'host, one at a time) or parallel (the others)')
    group.addoption('--record', metavar='FILE',
                    help="append one JSON line per test phase to FILE "
                         "(lane, worker, outcome, start, stop), for "
                         "python -m memagg.tests.budget")


def pytest_configure(config):
    workers = getattr(config.option, 'numprocesses', None)
    if config.getoption('lane') == 'host' and workers:
        raise pytest.UsageError(
            '--lane host runs one test at a time: drop -n %s' % workers)
    path = config.getoption('record')
    if path and not hasattr(config, 'workerinput'):
        config.pluginmanager.register(
            Recorder(path, config.getoption('lane') or 'all'),
            'memagg-recorder')


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    lane = config.getoption('lane')
    if lane is None:
        return
    keep, drop = [], []
    for item in items:
        in_host = item.get_closest_marker('host') is not None
        (keep if in_host == (lane == 'host') else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class Recorder:
    """Appends a JSON line per test phase (outcome, start, stop, and the
    failure's text) to a file.
    Under xdist it runs in the controller, which gets every worker's
    reports, a crashed worker's included; workers do not record."""

    def __init__(self, path, lane):
        self.path = path
        self.lane = lane
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)

    def pytest_runtest_logreport(self, report):
        node = getattr(report, 'node', None)
        now = time.time()
        line = {
            'nodeid': report.nodeid, 'when': report.when,
            'outcome': report.outcome,
            'start': getattr(report, 'start', 0) or now,
            'stop': getattr(report, 'stop', 0) or now,
            'lane': self.lane,
            'worker': node.gateway.id if node is not None else 'main',
        }
        if report.failed:
            # Readable while the lane still runs; pytest's own report of
            # the failure comes only at the lane's end.
            line['message'] = report.longreprtext[-4000:]
        # One short line per O_APPEND write: lines never interleave.
        with open(self.path, 'a') as f:
            f.write(json.dumps(line) + '\n')
