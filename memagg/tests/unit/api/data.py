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

"""Rows of every kind the API serves, written to a migrated test database.

Used by the API's unit tests (Flask test client) and functional tests (real
HTTP server), so both see the same cluster: two hosts, instances of two
projects, WSS history, a grant with slabs, an audit with actions, a
migration and two services (one up, one down).
"""
import datetime

from oslo_utils import timeutils
from sqlalchemy import orm

from memagg.common import context as memagg_context
from memagg.db import facade as db_facade
from memagg.db import reports as db_reports
from memagg.db import services as db_services
from memagg.db.sqlalchemy import models

PROJECT_A = 'project-a'
PROJECT_B = 'project-b'
INSTANCE_A = '11111111-1111-4111-8111-111111111111'
INSTANCE_B = '22222222-2222-4222-8222-222222222222'
GRANT = '33333333-3333-4333-8333-333333333333'
AUDIT = '44444444-4444-4444-8444-444444444444'
MIGRATION = '55555555-5555-4555-8555-555555555555'
MISSING = '99999999-9999-4999-8999-999999999999'
GRANT_SECRET = 'never-shown-4f1c2b'
T0 = datetime.datetime(2024, 5, 1, 12, 0, 0)
SAMPLES = 6


def sampler(i):
    """The sampler behind an instance's i-th estimate: the first window
    warming, from sampler_pages, the next ones from the n their hot
    fraction asked for."""
    if i == 0:
        return dict(sampler_backend='damon_paddr', sampler_error_mb=24.5,
                    sampler_pages=1000, warming=True)
    return dict(sampler_backend='damon_paddr', sampler_error_mb=12.25,
                sampler_pages=4610, warming=False)


def reclaim(i):
    """Host reclaim behind an instance's i-th period: nothing held on the
    first (no promotion rate yet), then 64 MiB more a period."""
    if i == 0:
        return dict(reclaimed_mb=0, promotion_rate=None)
    return dict(reclaimed_mb=64 * i, promotion_rate=2.5 * i)


#: The instance view of host reclaim after the last period: its rate of
#: 12.5 pages a minute against 1100 MiB of WSS^maxavg and the 0.2 % SLO.
RECLAIM = dict(reclaim(SAMPLES - 1),
               promotion_rate_pct=12.5 * 100 / (1100 * 256),
               promotion_slo=0.2 / 100 * 1100 * 256,
               reclaim_mechanism='madvise')


def load():
    """Write the cluster; return the admin context used."""
    ctx = memagg_context.get_admin_context()
    for name, memory, instances in (
            ('host-1', 65536, [(INSTANCE_A, PROJECT_A)]),
            ('host-2', 32768, [(INSTANCE_B, PROJECT_B)])):
        samples = [dict(instance_uuid=uuid,
                        sampled_at=T0 + datetime.timedelta(minutes=i),
                        wss_mb=1000 + i, wss_maxavg_mb=1100,
                        current_mb=2048, target_mb=1500,
                        estimator='badis/V/sampler', **sampler(i),
                        **reclaim(i))
                   for uuid, _ in instances for i in range(SAMPLES)]
        db_reports.report_ingest(
            ctx, dict(name=name, memory_mb=memory, vcpus=8,
                      free_reservoir_mb=4096, lendable_mb=2048),
            [dict(uuid=uuid, name='vm-' + uuid[:4], project_id=project,
                  booked_mb=4096, current_mb=2048, wss_mb=1005,
                  wss_maxavg_mb=1100, remote_mb=512, estimator='badis',
                  local_policy='cmms/equal', l1_share_mb=384,
                  **sampler(SAMPLES - 1),
                  **RECLAIM)
             for uuid, project in instances], samples)
    db_services.service_heartbeat(ctx, 'host-1', 'memagg-compute', 'compute')
    db_services.service_heartbeat(ctx, 'ctl', 'memagg-scheduler', 'scheduler')
    with orm.Session(db_facade.get_engine()) as session, session.begin():
        stale = session.query(models.Service).filter_by(host='ctl').one()
        stale.last_seen_at = timeutils.utcnow() - datetime.timedelta(
            days=1)
        grant = models.Grant(uuid=GRANT, instance_uuid=INSTANCE_A,
                             consumer_host='host-1', requested_mb=512,
                             granted_mb=512, status='active',
                             secret=GRANT_SECRET)
        grant.slabs = [models.Slab(index=i, donor_host='host-2', size_mb=256,
                                   replica_host=None, remote_addr=4096 * i)
                       for i in range(2)]
        audit = models.Audit(uuid=AUDIT, state='succeeded',
                             parameters={'threshold': 0.8},
                             reason='underload', finished_at=T0)
        audit.actions = [
            models.AuditAction(sequence=0, action_type='migrate',
                               instance_uuid=INSTANCE_B,
                               source_host='host-2', dest_host='host-1',
                               reason='underloaded host'),
            models.AuditAction(sequence=1, action_type='power_off',
                               source_host='host-2')]
        migration = models.Migration(
            uuid=MIGRATION, instance_uuid=INSTANCE_B, source_host='host-2',
            dest_host='host-1', status='completed', attempts=1,
            bytes_transferred=1 << 30, duration_s=1.5, downtime_ms=40.0,
            remote_share=0.25)
        # Its consumer's last report: 352 MiB written, on its donor.
        ledger = models.GrantLedger(
            grant_uuid=GRANT, host='host-1', reported_at=T0,
            l1_puts=90112, l1_gets=41230, l1_flushes=0, l1_moved_in=0,
            l1_moved_out=0, l1_evicts=0, l1_used=90112, l2_puts=0,
            l2_gets=0, l2_flushes=0, l2_moved_in=0, l2_moved_out=0,
            l2_evicts=0, l2_used=0)
        session.add_all([grant, ledger, audit, migration])
    return ctx


def load_instances(count, host='bulk-host', project=PROJECT_A):
    """Add ``count`` instances on one host in one report; return their
    UUIDs in creation order."""
    uuids = ['%08x-0000-4000-8000-%012x' % (count, i) for i in range(count)]
    db_reports.report_ingest(
        memagg_context.get_admin_context(),
        dict(name=host, memory_mb=1 << 20),
        [dict(uuid=uuid, name='vm-%d' % i, project_id=project,
              booked_mb=1024 + i, current_mb=1024)
         for i, uuid in enumerate(uuids)], [])
    return uuids
