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

"""Benchmark: GET /v1/instances with 10,000 instances in MariaDB.

Creates a fresh database on the MariaDB server the tests use (see
memagg/tests/db_backends.py; MEMAGG_TEST_MYSQL_URL overrides it), migrates
it, loads 10,000 instances on 100 hosts (benchmarks/_api_data.py), serves
the API in this process with memagg.api.server, the in-process threaded
HTTP server, on a loopback port, and sends a bounded
number of GET /v1/instances from a few client threads: the default page and
limit=1000. Prints requests/s, p50 and p99 latency for each, and the peer:
the same pages read straight from the DB API, without HTTP, JSON or policy.
The database is dropped at the end.

Run: .venv/bin/python benchmarks/api_list_instances.py [--requests N]
"""
import argparse
import concurrent.futures
import logging
import os
import statistics
import sys
import threading
import time

import requests

from memagg.api import app as api_app
from memagg.api import server
from memagg.conf import CONF
from memagg.db import listings as db_listings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _api_data as api_data  # noqa: E402


def run(label, call, total, threads):
    """Issue ``total`` calls from ``threads`` threads; print the figures."""
    latencies = []
    lock = threading.Lock()
    counter = iter(range(total))

    def worker():
        session = requests.Session()
        mine = []
        while True:
            with lock:
                if next(counter, None) is None:
                    break
            started = time.perf_counter()
            call(session)
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(worker) for _ in range(threads)]:
            future.result()
    elapsed = time.perf_counter() - started
    print('%-44s %6d req  %8.1f req/s  p50 %7.1f ms  p99 %7.1f ms' % (
        label, len(latencies), len(latencies) / elapsed,
        statistics.median(latencies) * 1000,
        api_data.percentile(latencies, 0.99) * 1000))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requests', type=int, default=400,
                        help='GETs of the default page (a tenth as many '
                             'with limit=1000)')
    parser.add_argument('--threads', type=int, default=4)
    args = parser.parse_args()
    logging.getLogger('werkzeug').setLevel(logging.WARNING)
    CONF([], project='memagg', default_config_files=[])
    CONF.set_override('auth_strategy', 'noauth', group='api')
    api_app.set_api_defaults(CONF)
    with api_data.loaded_mariadb() as (_, ctx):
        httpd = server.make_server(api_app.create_app(CONF), '127.0.0.1', 0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        base = server.url(httpd) + '/v1/instances'
        try:
            def page(limit):
                def call(session):
                    response = session.get(
                        base + ('?limit=%d' % limit if limit else ''),
                        timeout=60)
                    response.raise_for_status()
                    expected = limit or CONF.api.default_limit
                    assert len(response.json()['instances']) == expected
                return call

            def direct(limit):
                def call(session):
                    rows = db_listings.list_resources(ctx, 'instances',
                                                      limit=limit)
                    assert len(rows) == limit
                return call

            print('%d client threads, server: memagg.api.server (threaded)'
                  % args.threads)
            run('GET /v1/instances (default page, 100)', page(None),
                args.requests, args.threads)
            run('GET /v1/instances?limit=1000', page(1000),
                max(1, args.requests // 10), args.threads)
            run('peer: db_listings.list_resources, 100 rows', direct(100),
                args.requests, args.threads)
            run('peer: db_listings.list_resources, 1000 rows', direct(1000),
                max(1, args.requests // 10), args.threads)
        finally:
            httpd.shutdown()
            httpd.server_close()


if __name__ == '__main__':
    main()
