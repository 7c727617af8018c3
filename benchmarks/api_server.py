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

"""Benchmark: GET /v1/instances?limit=100 under memagg-api (uWSGI) and under
the development server, 10,000 instances in MariaDB.

Loads a fresh MariaDB database (benchmarks/_api_data.py), writes one config
file (noauth, that database, in-process messaging), then serves the API on
a loopback port with each server in turn, in processes of its own:

* memagg: ``memagg-api --config-file F``, uWSGI with the default ``[api]
  workers`` (the number of CPUs) and ``threads``;
* peer: memagg.api.server (Werkzeug's threaded server, what memagg-api ran
  before) in one process, this script with ``--serve-dev``.

The same load comes from ``wrk`` (apt-get install wrk), another process:
``--connections`` connections for ``--duration`` seconds after a
``--warmup``. Prints requests/s, p50 and p99 latency for each and the
ratios. The database is dropped at the end.

Run: .venv/bin/python benchmarks/api_server.py [--connections 16]
     [--duration 20]
"""
import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import requests

from memagg.api import app as api_app
from memagg.api import server
from memagg.conf import CONF
from memagg.tests.functional import service_procs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _api_data as api_data  # noqa: E402

PAGE = '/v1/instances?limit=100'
START_TIMEOUT = 60
BIN_DIR = os.path.dirname(sys.executable)
_UNITS = {'us': 1e-3, 'ms': 1.0, 's': 1e3}


class RunError(Exception):
    """A server or wrk failed: the benchmark could not run."""


def serve_dev(config_file, port):
    """The peer: the API under memagg.api.server in this process."""
    CONF(['--config-file', config_file], project='memagg')
    api_app.set_api_defaults(CONF)
    httpd = server.make_server(api_app.create_app(CONF), '127.0.0.1', port)
    httpd.serve_forever()


def write_config(path, database_url, port):
    """The servers' memagg.conf: noauth on 127.0.0.1:``port`` over
    ``database_url``, in-process messaging."""
    service_procs.write_config(path, {
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': database_url},
        'api': {'host': '127.0.0.1', 'port': port,
                'auth_strategy': 'noauth'}})


@contextlib.contextmanager
def uwsgi_api(tmp, database_url):
    """memagg-api (uWSGI, noauth) on a free port of 127.0.0.1 over
    ``database_url``, its config and log in ``tmp``: yields (its Popen,
    URL, log path) as soon as it is started, and stops it after."""
    port = service_procs.free_port()
    url = 'http://127.0.0.1:%d' % port
    config = os.path.join(tmp, 'memagg.conf')
    write_config(config, database_url, port)
    log_path = os.path.join(tmp, 'memagg-api.log')
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(
            [os.path.join(BIN_DIR, 'memagg-api'), '--config-file', config],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield proc, url, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def wait_until_serving(proc, url, log_path):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunError('server exited (%s); log %s' % (
                proc.returncode, log_path))
        try:
            response = requests.get(url + PAGE, timeout=10)
        except requests.ConnectionError:
            time.sleep(0.2)
            continue
        response.raise_for_status()
        if len(response.json()['instances']) != 100:
            raise RunError('%s did not return a page of 100' % url)
        return
    raise RunError('server not answering %s within %d s' % (
        url, START_TIMEOUT))


def wrk(url, connections, threads, seconds):
    """One wrk run; (requests/s, p50 ms, p99 ms, requests)."""
    result = subprocess.run(
        ['wrk', '--latency', '-t', str(threads), '-c', str(connections),
         '-d', '%ds' % seconds, '--timeout', '10s', url + PAGE],
        capture_output=True, text=True, timeout=seconds + 60,
        stdin=subprocess.DEVNULL)
    out = result.stdout
    if result.returncode:
        raise RunError('wrk failed: %s' % (result.stderr or out))
    if 'Non-2xx or 3xx responses' in out:
        raise RunError('wrk got errors from the server:\n%s' % out)
    latency = {q: float(v) * _UNITS[unit] for q, v, unit in re.findall(
        r'^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$', out, re.M)}
    rate = float(re.search(r'^Requests/sec:\s+([\d.]+)', out, re.M).group(1))
    count = int(re.search(r'(\d+) requests in', out).group(1))
    errors = re.search(r'^\s+Socket errors: (.*)$', out, re.M)
    if errors:
        print('  wrk socket errors: %s' % errors.group(1))
    return rate, latency['50'], latency['99'], count


def measure(label, command, url, log_path, args):
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        wait_until_serving(proc, url, log_path)
        wrk(url, args.connections, args.wrk_threads, args.warmup)
        rate, p50, p99, count = wrk(url, args.connections, args.wrk_threads,
                                    args.duration)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    print('%-46s %7d req  %8.1f req/s  p50 %7.1f ms  p99 %7.1f ms' % (
        label, count, rate, p50, p99))
    return rate, p50, p99


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--connections', type=int, default=16,
                        help='concurrent connections wrk keeps busy')
    parser.add_argument('--duration', type=int, default=20,
                        help='seconds measured per server')
    parser.add_argument('--warmup', type=int, default=3,
                        help='seconds of load before each measurement')
    parser.add_argument('--wrk-threads', type=int, default=1)
    parser.add_argument('--serve-dev', nargs=2, metavar=('CONFIG', 'PORT'),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_dev:
        serve_dev(args.serve_dev[0], int(args.serve_dev[1]))
        return
    if not shutil.which('wrk'):
        sys.exit('api_server: wrk not found; apt-get install wrk '
                 '(tools/setup.sh installs it)')
    CONF([], project='memagg', default_config_files=[])
    with tempfile.TemporaryDirectory() as tmp, \
            api_data.loaded_mariadb() as (database_url, _):
        port = service_procs.free_port()
        url = 'http://127.0.0.1:%d' % port
        config = os.path.join(tmp, 'memagg.conf')
        write_config(config, database_url, port)
        print('GET %s, %d connections from wrk for %d s (after %d s of '
              'warm-up), %d CPUs' % (PAGE, args.connections, args.duration,
                                     args.warmup, os.cpu_count()))
        try:
            memagg = measure(
                'memagg: memagg-api (uWSGI, default workers)',
                [os.path.join(BIN_DIR, 'memagg-api'), '--config-file',
                 config], url, os.path.join(tmp, 'memagg-api.log'), args)
            peer = measure(
                'peer: memagg.api.server (Werkzeug, threaded)',
                [sys.executable, os.path.abspath(__file__), '--serve-dev',
                 config, str(port)], url, os.path.join(tmp, 'dev.log'), args)
        except RunError as exc:
            sys.exit('api_server: %s' % exc)
    print('ratio memagg/peer: %.2fx req/s, p50 %.2fx, p99 %.2fx' % (
        memagg[0] / peer[0], memagg[1] / peer[1], memagg[2] / peer[2]))


if __name__ == '__main__':
    main()
