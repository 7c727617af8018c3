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

"""Benchmark: what ``openstack memagg host list`` adds to the OpenStack
client's own start-up, ``openstack --version``, side by side.

Loads a fresh SQLite database with ``--hosts`` hosts (each reporting a few
instances and its CPU use, as compute nodes do), serves it with
``memagg-api`` (uWSGI, noauth: no token to fetch), and runs, ``--rounds``
times, the peer ``openstack --version`` and ``openstack --os-auth-type none
--os-endpoint URL memagg host list`` (the console scripts as an operator
runs them), alternating which of the two goes first. Prints each round's
wall times, both medians, the difference (what the OpenStack client's
set-up for any command, memagg's command and client, agreeing a
microversion and the request add) and the ratio, and whether the
difference is within the target: 0.3 s. The CPU time (user and system) of
each command's process is printed beside it: on a busy machine the wall
times stretch, the CPU times much less.

Run: .venv/bin/python benchmarks/osc_host_list.py [--rounds N] [--hosts N]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.tests.functional import service_procs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_server  # noqa: E402

BIN_DIR = os.path.dirname(sys.executable)
OPENSTACK = os.path.join(BIN_DIR, 'openstack')
INSTANCES_PER_HOST = 4
#: What host list may add to the OpenStack client's start-up (issue 35).
TARGET_S = 0.3
START_TIMEOUT = 60


def at_least_one(text):
    """An argparse type: an integer of 1 or more."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1, got %s' % text)
    return value


def load(hosts):
    """Report ``hosts`` hosts into the database CONF names, migrated
    first."""
    migration.upgrade('head')
    ctx = memagg_context.get_admin_context()
    for h in range(hosts):
        db_reports.report_ingest(
            ctx, dict(name='bench-host-%03d' % h, memory_mb=262144,
                      vcpus=64),
            [dict(uuid=str(uuid.uuid4()), name='vm-%d-%d' % (h, i),
                  project_id='project-%d' % i, booked_mb=4096,
                  current_mb=2048, wss_mb=1024, wss_maxavg_mb=1100,
                  estimator='badis')
             for i in range(INSTANCES_PER_HOST)], [],
            host_sample=dict(cpu_util=0.1 + h / (hosts * 10.0),
                             mem_used_mb=65536))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command, expect=()):
    """Run ``command``; its (wall, CPU) time in seconds. Fails on a
    non-zero exit or when a string of ``expect`` is not in its output."""
    cpu = _children_cpu()
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started, _children_cpu() - cpu
    if result.returncode:
        raise api_server.RunError('%s failed: %s' % (' '.join(command),
                                                     result.stderr))
    missing = [text for text in expect if text not in result.stdout]
    if missing:
        raise api_server.RunError('%s did not list %s:\n%s' % (
            ' '.join(command), ', '.join(missing), result.stdout))
    return elapsed


def wait_until_serving(proc, url, log_path):
    deadline = time.monotonic() + START_TIMEOUT
    while not service_procs.answers(url + '/v1/hosts'):
        if proc.poll() is not None:
            raise api_server.RunError('memagg-api exited (%s); log %s' % (
                proc.returncode, log_path))
        if time.monotonic() > deadline:
            raise api_server.RunError('memagg-api not answering %s within '
                                      '%d s' % (url, START_TIMEOUT))
        time.sleep(0.2)


def rounds(url, hosts, count):
    """``count`` rounds of both commands, the first of each round taking
    turns; two lists of (wall, CPU) seconds: --version's, host list's."""
    version = [OPENSTACK, '--version']
    host_list = [OPENSTACK, '--os-auth-type', 'none', '--os-endpoint', url,
                 'memagg', 'host', 'list']
    names = ['bench-host-%03d' % h for h in range(hosts)]
    # Warm both once (page cache, uWSGI workers' imports).
    timed(version)
    timed(host_list, names)
    print('%5s %20s %20s %20s' % ('round', '--version ms (CPU)',
                                  'host list ms (CPU)', 'added ms (CPU)'))
    peer, memagg = [], []
    for number in range(1, count + 1):
        if number % 2:
            peer.append(timed(version))
            memagg.append(timed(host_list, names))
        else:
            memagg.append(timed(host_list, names))
            peer.append(timed(version))
        print('%5d %13.0f (%4.0f) %13.0f (%4.0f) %13.0f (%4.0f)' % (
            number, peer[-1][0] * 1000, peer[-1][1] * 1000,
            memagg[-1][0] * 1000, memagg[-1][1] * 1000,
            (memagg[-1][0] - peer[-1][0]) * 1000,
            (memagg[-1][1] - peer[-1][1]) * 1000))
    return peer, memagg


def report(peer, memagg):
    """Print the medians, the difference, the ratio and the verdict (on
    the wall times)."""
    peer_s, peer_cpu = (statistics.median(t) for t in zip(*peer))
    memagg_s, memagg_cpu = (statistics.median(t) for t in zip(*memagg))
    added = memagg_s - peer_s
    print('peer:   openstack --version            median %6.0f ms '
          '(CPU %4.0f ms)' % (peer_s * 1000, peer_cpu * 1000))
    print('memagg: openstack memagg host list     median %6.0f ms '
          '(CPU %4.0f ms)' % (memagg_s * 1000, memagg_cpu * 1000))
    print('added by memagg host list: %.0f ms (CPU %.0f ms); ratio host '
          'list/--version %.2f' % (added * 1000,
                                   (memagg_cpu - peer_cpu) * 1000,
                                   memagg_s / peer_s))
    print('target: at most %.0f ms added: %s' % (
        TARGET_S * 1000, 'met' if added <= TARGET_S else 'NOT met'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rounds', type=at_least_one, default=20,
                        help='runs of each command (default 20)')
    parser.add_argument('--hosts', type=at_least_one, default=100,
                        help='hosts in the database (default 100)')
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    os.environ.clear()
    os.environ.update(env)
    CONF([], project='memagg', default_config_files=[])
    with tempfile.TemporaryDirectory() as tmp:
        database_url = 'sqlite:///%s' % os.path.join(tmp, 'memagg.sqlite')
        CONF.set_override('connection', database_url, group='database')
        try:
            load(args.hosts)
        finally:
            db_facade.dispose()
        with api_server.uwsgi_api(tmp, database_url) as (proc, url,
                                                         log_path):
            try:
                wait_until_serving(proc, url, log_path)
                print('memagg-api (uWSGI, noauth) at %s, %d hosts, %d '
                      'rounds, %d CPUs' % (url, args.hosts, args.rounds,
                                           os.cpu_count()))
                peer, memagg = rounds(url, args.hosts, args.rounds)
            except api_server.RunError as exc:
                sys.exit('osc_host_list: %s' % exc)
    report(peer, memagg)


if __name__ == '__main__':
    main()
