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
    db_backends.seed_instance_and_sample(db_at_0007, UUID, T0)

    migration.upgrade('0008')

    assert db_backends.columns_of(
        db_at_0007, 'instances', UUID, list(RECLAIM) + ['wss_mb']) == dict(
            dict.fromkeys(RECLAIM), wss_mb=700)
    assert db_backends.columns_of(
        db_at_0007, 'wss_samples', UUID, list(HISTORY) + ['wss_mb']) == dict(
            dict.fromkeys(HISTORY), wss_mb=700)

    # The next report, on today's schema, fills them: the rates read back
    # as they were sent.
    migration.upgrade()
    ctxt = context.get_admin_context()
    db_reports.report_ingest(
        ctxt, dict(name='host-1'), [dict(uuid=UUID, **RECLAIM)],
        [dict(instance_uuid=UUID, sampled_at=T0 + datetime.timedelta(
            seconds=10), wss_mb=40, current_mb=1024,
            estimator='badis/V/sampler', **HISTORY)])
    instance = db_instances.instance_get(ctxt, UUID)
    new = db_listings.list_resources(ctxt, 'wss_samples')[-1]
    assert {k: getattr(instance, k) for k in RECLAIM} == RECLAIM
    assert {k: getattr(new, k) for k in HISTORY} == HISTORY
