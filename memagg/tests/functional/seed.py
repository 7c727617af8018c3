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

"""Write what a small cloud's compute nodes would have reported, for the
shared ``deployment`` fixture.

Run as ``python -m memagg.tests.functional.seed --config-file F
ADMIN_PROJECT MEMBER_PROJECT`` against a migrated database: it stores two
hosts, instances of both projects with a WSS history, an active grant with
its slabs and a finished migration, and prints what it stored as JSON. It
runs in its own process so the session-scoped fixture leaves the test
process's configuration (reset for every test) alone.
"""
import datetime
import json
import sys
import uuid

from oslo_utils import timeutils

from memagg.common import context
from memagg.conf import CONF
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

HOSTS = ('compute-1', 'compute-2')
SAMPLES = 6


def _instances(project_id, count):
    return [dict(uuid=str(uuid.uuid4()), name='vm-%s-%d' % (project_id[:6], n),
                 project_id=project_id, status='active', booked_mb=4096,
                 current_mb=2048 + 256 * n, target_mb=2048,
                 wss_mb=1024 + 128 * n, wss_maxavg_mb=1100 + 128 * n,
                 estimator='badis', local_policy='cmms/equal', cpu_util=0.2,
                 vcpus=2, remote_mb=0, reclaimed_mb=256 * n,
                 promotion_rate=4.0 * n, promotion_rate_pct=None,
                 promotion_slo=0.2 / 100 * (1100 + 128 * n) * 256,
                 reclaim_mechanism='madvise' if n else (
                     'none: opted out (memagg:host_reclaim=false)'))
            for n in range(count)]


def _report(ctxt, host, instances, now):
    db_reports.report_ingest(
        ctxt, dict(name=host, memory_mb=65536, reserved_mb=1024, vcpus=16,
                   # Sixteen digits in JSON: rounded in a CLI table.
                   cpu_util=1 / 3, free_reservoir_mb=8192, lendable_mb=4096),
        instances,
        [dict(instance_uuid=vm['uuid'], host=host,
              sampled_at=now - datetime.timedelta(minutes=minutes),
              wss_mb=vm['wss_mb'] + 8 * minutes,
              wss_maxavg_mb=vm['wss_maxavg_mb'],
              current_mb=vm['current_mb'], target_mb=vm['target_mb'],
              estimator='badis', reclaimed_mb=vm['reclaimed_mb'],
              promotion_rate=vm['promotion_rate'])
         for vm in instances for minutes in range(SAMPLES)],
        reported_at=now)


def _grant_and_migration(instance, consumer, donor, now):
    grant_uuid, migration_uuid = str(uuid.uuid4()), str(uuid.uuid4())
    # Made when the seeded history ends, so that the history's last sample
    # counts it whatever second the insert runs in (created_at would be
    # the insert's time: a second later when seeding crosses one).
    [grant_id] = rows.insert(models.Grant, dict(
        uuid=grant_uuid, instance_uuid=instance['uuid'],
        consumer_host=consumer, requested_mb=256, granted_mb=256,
        status='active', secret=uuid.uuid4().hex, slab_size_mb=128,
        created_at=now))
    rows.insert(models.Slab, *[dict(
        grant_id=grant_id, index=i, donor_host=donor, size_mb=128,
        endpoint='tcp://%s:7450' % donor, status='active') for i in range(2)])
    rows.insert(models.Migration, dict(
        uuid=migration_uuid, instance_uuid=instance['uuid'],
        source_host=donor, dest_host=consumer, status='succeeded',
        attempts=1, bytes_transferred=512 * 2 ** 20, duration_s=4.2,
        downtime_ms=35.0, remote_share=0.25))
    return grant_uuid, migration_uuid


def main(argv):
    """Seed the database of ``--config-file``; print the seed as JSON."""
    admin_project, member_project = argv[-2:]
    CONF(argv[:-2], project='memagg')
    ctxt = context.get_admin_context()
    now = timeutils.utcnow().replace(microsecond=0)
    instances = {'admin': _instances(admin_project, 3),
                 'member': _instances(member_project, 2)}
    for host, who in zip(HOSTS, ('admin', 'member')):
        _report(ctxt, host, instances[who], now)
    grant, migration = _grant_and_migration(
        instances['admin'][0], HOSTS[0], HOSTS[1], now)
    json.dump({'hosts': list(HOSTS),
               'instances': {who: [vm['uuid'] for vm in vms]
                             for who, vms in instances.items()},
               'grants': [grant], 'migrations': [migration]}, sys.stdout)


if __name__ == '__main__':
    main(sys.argv[1:])
