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

"""Migration 0007 (the sampler behind an estimate) on a database at 0006
that holds an instance and its WSS samples: they read back with no sampler
and not warming, and a new report stores its sampler, on SQLite, MariaDB
and PostgreSQL."""
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
SAMPLER = dict(sampler_backend='damon_paddr', sampler_error_mb=0.8,
               sampler_pages=4610, warming=True)


@pytest.fixture(params=['sqlite', 'mysql', 'postgresql'])
def db_at_0006(request, conf, tmp_path):
    with db_backends.migrated(request.param, conf, tmp_path, '0006'):
        yield db_facade.get_engine()


def test_rows_from_before_0007_have_no_sampler(db_at_0006):
    db_backends.seed_instance_and_sample(db_at_0006, UUID, T0)

    migration.upgrade('0007')

    for table in ('instances', 'wss_samples'):
        assert db_backends.columns_of(
            db_at_0006, table, UUID, list(SAMPLER) + ['wss_mb']) == dict(
                sampler_backend=None, sampler_error_mb=None,
                sampler_pages=None, warming=False, wss_mb=700)

    # The next report, on today's schema, fills them: the error reads back
    # as it was sent.
    migration.upgrade()
    ctxt = context.get_admin_context()
    db_reports.report_ingest(
        ctxt, dict(name='host-1'), [dict(uuid=UUID, **SAMPLER)],
        [dict(instance_uuid=UUID, sampled_at=T0 + datetime.timedelta(
            seconds=10), wss_mb=40, current_mb=1024,
            estimator='badis/V/sampler', **SAMPLER)])
    instance = db_instances.instance_get(ctxt, UUID)
    new = db_listings.list_resources(ctxt, 'wss_samples')[-1]
    for row in (instance, new):
        assert {k: getattr(row, k) for k in SAMPLER} == SAMPLER
