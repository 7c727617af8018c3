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

"""Shared by the API benchmarks and the dashboard's fleet test: a fresh
MariaDB database holding 10,000 instances on 100 hosts (or as many hosts
as asked, with a history of WSS samples if asked), and latency
percentiles.

Run as a script, it loads the database a memagg.conf names:
``python benchmarks/_api_data.py --config-file memagg.conf --hosts 1000
--samples 12``.
"""
import argparse
import contextlib
import datetime
import tempfile
import time
import uuid

from oslo_utils import timeutils

from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.tests import db_backends

INSTANCES = 10000
HOSTS = 100


# Between two of an instance's history samples: memagg-compute's period
# is 10 s, a history of a few samples an hour long is what a chart needs.
SAMPLE_STEP = datetime.timedelta(minutes=5)


def _samples(instances, count, now):
    """``count`` WSS samples of each of ``instances``, SAMPLE_STEP apart
    up to ``now``, the working set growing towards the latest."""
    return [dict(instance_uuid=vm['uuid'], sampled_at=now - k * SAMPLE_STEP,
                 wss_mb=vm['wss_mb'] - 8 * k,
                 wss_maxavg_mb=vm['wss_maxavg_mb'] - 8 * k,
                 current_mb=vm['current_mb'], target_mb=vm['current_mb'],
                 estimator='badis')
            for vm in instances for k in range(count)]


def load(ctx, hosts=HOSTS, instances=INSTANCES, samples=0):
    """Report ``instances`` instances on ``hosts`` hosts, as compute nodes
    do, each with ``samples`` WSS samples of history. Hosts differ in
    size (128 to 512 GiB) and load, so sorting them means something."""
    per_host = instances // hosts
    now = timeutils.utcnow().replace(microsecond=0)
    for h in range(hosts):
        vms = [dict(uuid=str(uuid.uuid4()), name='vm-%d-%d' % (h, i),
                    project_id='project-%d' % (i % 10),
                    booked_mb=4096 + 1024 * (h % 4), current_mb=2048 + i,
                    wss_mb=1024 + i + 7 * (h % 13),
                    wss_maxavg_mb=1100 + i + 7 * (h % 13),
                    estimator='badis')
               for i in range(per_host)]
        db_reports.report_ingest(
            ctx, dict(name='bench-host-%04d' % h,
                      memory_mb=131072 * (1 + h % 4), vcpus=64,
                      free_reservoir_mb=1024 * (h % 50)),
            vms, _samples(vms, samples, now), reported_at=now)


@contextlib.contextmanager
def loaded_mariadb():
    """Point CONF (parsed) at a new database on the MariaDB server the tests
    use (memagg/tests/db_backends.py; MEMAGG_TEST_MYSQL_URL overrides it),
    migrated and loaded; yield its URL and the admin context; drop it
    afterwards."""
    with tempfile.TemporaryDirectory() as tmp, \
            db_backends.provisioned('mysql', tmp) as url:
        CONF.set_override('connection', url, group='database')
        try:
            migration.upgrade('head')
            ctx = memagg_context.get_admin_context()
            started = time.perf_counter()
            load(ctx)
            print('loaded %d instances on %d hosts into MariaDB in %.1f s'
                  % (INSTANCES, HOSTS, time.perf_counter() - started))
            yield url, ctx
        finally:
            db_facade.dispose()


def percentile(values, fraction):
    """The ``fraction`` (0..1) percentile of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    """Load the (migrated) database of --config-file."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--hosts', type=int, default=HOSTS)
    parser.add_argument('--instances', type=int, default=INSTANCES)
    parser.add_argument('--samples', type=int, default=0,
                        help='WSS samples of history per instance')
    args = parser.parse_args()
    CONF(['--config-file', args.config_file], project='memagg')
    started = time.perf_counter()
    load(memagg_context.get_admin_context(), args.hosts, args.instances,
         args.samples)
    print('loaded %d instances on %d hosts, %d samples each, in %.1f s'
          % (args.instances, args.hosts, args.samples,
             time.perf_counter() - started))


if __name__ == '__main__':
    main()
