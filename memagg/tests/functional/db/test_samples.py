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

"""memagg.db.samples on SQLite, MariaDB and PostgreSQL (real servers): the
latest samples per host and per VM (window functions) and the purge."""
import datetime

from oslo_utils import timeutils
import pytest

from memagg.db import listings as db_listings
from memagg.db import samples as db_samples
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows
from memagg.tests.unit.db.rows import VM_A, VM_B

pytestmark = pytest.mark.functional


def _at(minutes):
    return rows.ago(hours=1) + datetime.timedelta(minutes=minutes)


def test_latest_host_samples_are_the_newest_n_oldest_first(db):
    rows.insert(models.HostSample, *[
        dict(host=host, sampled_at=_at(i), cpu_util=i / 10,
             mem_used_mb=100 * i)
        for host in ('h1', 'h2') for i in range(5)])

    latest = db_samples.host_samples_latest(db, ['h1', 'h2', 'h3'], 3)

    assert latest['h1'] == [(0.2, 200), (0.3, 300), (0.4, 400)]
    assert latest['h2'] == latest['h1']
    assert latest['h3'] == []


def test_latest_cpu_skips_samples_without_cpu(db):
    rows.insert(models.WssSample, *(
        [dict(instance_uuid=VM_A, sampled_at=_at(i), cpu_util=float(i))
         for i in range(4)]
        + [dict(instance_uuid=VM_A, sampled_at=_at(9), cpu_util=None),
           dict(instance_uuid=VM_B, sampled_at=_at(1), cpu_util=0.5)]))

    latest = db_samples.instance_cpu_latest(db, [VM_A, VM_B], 2)

    assert latest == {VM_A: [2.0, 3.0], VM_B: [0.5]}


def test_purge_respects_retention(admin_context, conf, any_db):
    at = {hours: rows.ago(hours=hours) for hours in (200, 100, 1)}
    rows.insert(models.WssSample, *[dict(sampled_at=t) for t in at.values()])

    assert db_samples.purge_wss_samples(admin_context) == 1
    conf.config(sample_retention_hours=50, group='wss')
    assert db_samples.purge_wss_samples(admin_context) == 1
    left = db_listings.list_resources(admin_context, 'wss_samples')
    assert [s.sampled_at for s in left] == [at[1]]
    assert db_samples.purge_wss_samples(admin_context, older_than_hours=0) == 1


def test_purge_drops_old_host_samples_too(db):
    rows.insert(models.HostSample,
                dict(host='h1', sampled_at=rows.ago(hours=3), cpu_util=0.1,
                     mem_used_mb=1),
                dict(host='h1', sampled_at=timeutils.utcnow(), cpu_util=0.2,
                     mem_used_mb=2))
    rows.insert(models.WssSample, dict(sampled_at=rows.ago(hours=3)))

    assert db_samples.purge_wss_samples(db, older_than_hours=1) == 2
    assert db_samples.host_samples_latest(db, ['h1'], 5) == {'h1': [(0.2, 2)]}
