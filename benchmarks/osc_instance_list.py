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

"""Benchmark: ``openstack memagg instance list`` over 10,000 instances,
page by page, against curl of the same pages.

Loads a fresh MariaDB database with 10,000 instances on 100 hosts
(benchmarks/_api_data.py), serves it with ``memagg-api`` (uWSGI, noauth:
no token for either side), and walks every page of ``--limit`` instances:
for each page, ``openstack --os-auth-type none --os-endpoint URL
--os-memagg-api-version 1.3 memagg instance list --limit N [--marker M]
-f json`` (the console script as an operator runs it) and ``curl`` of the
same ``GET /v1/instances?limit=N&marker=M`` at the same microversion.
Prints each page's CLI and curl wall time, then the means, the CLI's own
overhead per page (CLI less curl) and the ratio, and, for scale, the
start-up of ``openstack --version`` alone. The database is dropped at the
end.

Run: .venv/bin/python benchmarks/osc_instance_list.py [--limit N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from memagg.conf import CONF

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _api_data as api_data  # noqa: E402
import api_server  # noqa: E402

VERSION = '1.3'
BIN_DIR = os.path.dirname(sys.executable)


def timed(command):
    """Run ``command``; (seconds, stdout). Fails on a non-zero exit."""
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if result.returncode:
        raise api_server.RunError('%s failed: %s' % (command[0],
                                                     result.stderr))
    return elapsed, result.stdout


def cli_page(url, limit, marker):
    command = [os.path.join(BIN_DIR, 'openstack'), '--os-auth-type', 'none',
               '--os-endpoint', url, '--os-memagg-api-version', VERSION,
               'memagg', 'instance', 'list', '--limit', str(limit),
               '-f', 'json']
    if marker:
        command += ['--marker', marker]
    elapsed, out = timed(command)
    return elapsed, [i['uuid'] for i in json.loads(out)]


def curl_page(url, limit, marker):
    page = '%s/v1/instances?limit=%d' % (url, limit)
    if marker:
        page += '&marker=%s' % marker
    elapsed, out = timed(['curl', '-sS', '--fail', '-H',
                          'OpenStack-API-Version: memory-aggregation %s'
                          % VERSION, page])
    return elapsed, [i['uuid'] for i in json.loads(out)['instances']]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--limit', type=int, default=1000,
                        help='page size (default 1000: 10 pages)')
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    os.environ.clear()
    os.environ.update(env)
    CONF([], project='memagg', default_config_files=[])
    with tempfile.TemporaryDirectory() as tmp, \
            api_data.loaded_mariadb() as (database_url, _):
        with api_server.uwsgi_api(tmp, database_url) as (proc, url,
                                                         log_path):
            api_server.wait_until_serving(proc, url, log_path)
            # Warm both paths once (page cache, uWSGI workers' imports).
            cli_page(url, args.limit, None)
            curl_page(url, args.limit, None)
            print('memagg-api (uWSGI, noauth) at %s, microversion %s, '
                  'pages of %d' % (url, VERSION, args.limit))
            print('%5s %12s %12s %12s' % ('page', 'cli ms', 'curl ms',
                                          'overhead ms'))
            cli_times, curl_times, marker, seen = [], [], None, 0
            for number in range(1, 10 ** 6):
                cli_s, cli_uuids = cli_page(url, args.limit, marker)
                curl_s, curl_uuids = curl_page(url, args.limit, marker)
                if cli_uuids != curl_uuids:
                    raise api_server.RunError(
                        'page %d differs between the CLI and curl' % number)
                cli_times.append(cli_s)
                curl_times.append(curl_s)
                seen += len(cli_uuids)
                print('%5d %12.1f %12.1f %12.1f' % (
                    number, cli_s * 1000, curl_s * 1000,
                    (cli_s - curl_s) * 1000))
                if len(cli_uuids) < args.limit:
                    break
                marker = cli_uuids[-1]
            if seen != api_data.INSTANCES:
                raise api_server.RunError('walked %d instances, not %d'
                                          % (seen, api_data.INSTANCES))
            cli_mean = statistics.mean(cli_times)
            curl_mean = statistics.mean(curl_times)
            print('%d instances in %d pages' % (seen, len(cli_times)))
            print('memagg: openstack memagg instance list  mean %.1f ms/page'
                  % (cli_mean * 1000))
            print('peer:   curl                            mean %.1f ms/page'
                  % (curl_mean * 1000))
            print('CLI overhead per page: mean %.1f ms; ratio CLI/curl %.1f'
                  % ((cli_mean - curl_mean) * 1000, cli_mean / curl_mean))
            startup = statistics.mean(
                timed([os.path.join(BIN_DIR, 'openstack'), '--version'])[0]
                for _ in range(3))
            print('of which the openstack client starting (openstack '
                  '--version): %.1f ms' % (startup * 1000))


if __name__ == '__main__':
    main()
