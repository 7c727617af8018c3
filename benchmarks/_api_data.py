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

"""Shared by the API benchmarks: a fresh MariaDB database holding 10,000
instances on 100 hosts, and latency percentiles."""
import contextlib
import tempfile
import time
import uuid

from memagg.common import context as memagg_context
from memagg.conf import CONF
from memagg.db import facade as db_facade
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.tests import db_backends

INSTANCES = 10000
HOSTS = 100


def load(ctx):
    """Report INSTANCES instances on HOSTS hosts, as compute nodes do."""
    per_host = INSTANCES // HOSTS
    for h in range(HOSTS):
        db_reports.report_ingest(
            ctx, dict(name='bench-host-%03d' % h, memory_mb=262144,
                      vcpus=64),
            [dict(uuid=str(uuid.uuid4()), name='vm-%d-%d' % (h, i),
                  project_id='project-%d' % (i % 10), booked_mb=4096,
                  current_mb=2048 + i, wss_mb=1024 + i,
                  wss_maxavg_mb=1100 + i, estimator='badis')
             for i in range(per_host)], [])


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
