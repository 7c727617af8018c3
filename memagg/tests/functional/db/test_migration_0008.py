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

"""Migration 0008 (host reclaim accounted) on a database at 0007 that
holds an instance and its WSS samples: they read back with NULL reclaim
fields, and a new report stores them, on SQLite, MariaDB and PostgreSQL."""
import datetime

import pytest
import sqlalchemy as sa

from memagg.common import context
from memagg.db import facade as db_facade
from memagg.db import instances as db_instances
from memagg.db import listings as db_listings
from memagg.db import migration
from memagg.db import reports as db_reports
from memagg.tests import db_backends

pytestmark = pytest.mark.functional

T0 = datetime.datetime(2024, 5, 1, 12, 0, 0)
UUID = '11111111-1111-4111-8111-111111111111'
HISTORY = dict(reclaimed_mb=300, promotion_rate=65.536)
RECLAIM = dict(HISTORY, promotion_rate_pct=0.05, promotion_slo=262.144,
               reclaim_mechanism='madvise')


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def db_at_0007(request, conf, tmp_path):
    with db_backends.migrated(request.param, conf, tmp_path, '0007'):
        yield db_facade.get_engine()


def test_rows_from_before_0008_have_no_reclaim(db_at_0007):
    with db_at_0007.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO instances (uuid, name, host, status, booked_mb, "
            "current_mb, wss_mb, cpu_util, remote_mb, vcpus, created_at) "
            "VALUES (:uuid, 'vm', 'host-1', 'active', 2048, 1024, 700, 0.5, "
            "0, 2, :t)"), dict(uuid=UUID, t=T0))
        connection.execute(sa.text(
            "INSERT INTO wss_samples (instance_uuid, host, sampled_at, "
            "wss_mb, current_mb, estimator, created_at) VALUES "
            "(:uuid, 'host-1', :t, 700, 1024, 'badis/V/sampler', :t)"),
            dict(uuid=UUID, t=T0))

    migration.upgrade('0008')

    ctxt = context.get_admin_context()
    instance = db_instances.instance_get(ctxt, UUID)
    old, = db_listings.list_resources(ctxt, 'wss_samples')
    assert {k: getattr(instance, k) for k in RECLAIM} == dict.fromkeys(
        RECLAIM)
    assert {k: getattr(old, k) for k in HISTORY} == dict.fromkeys(HISTORY)
    assert (instance.wss_mb, old.wss_mb) == (700, 700)

    # The next report fills them: the rates read back as they were sent.
    db_reports.report_ingest(
        ctxt, dict(name='host-1'), [dict(uuid=UUID, **RECLAIM)],
        [dict(instance_uuid=UUID, sampled_at=T0 + datetime.timedelta(
            seconds=10), wss_mb=40, current_mb=1024,
            estimator='badis/V/sampler', **HISTORY)])
    instance = db_instances.instance_get(ctxt, UUID)
    new = db_listings.list_resources(ctxt, 'wss_samples')[-1]
    assert {k: getattr(instance, k) for k in RECLAIM} == RECLAIM
    assert {k: getattr(new, k) for k in HISTORY} == HISTORY
