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

"""memagg.db.hosts on SQLite, MariaDB and PostgreSQL (real servers): the
hosts a round considers, and a host's state."""
import pytest

from memagg.common import exceptions
from memagg.db import hosts as db_hosts
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional


def test_round_hosts_are_the_fresh_and_the_standby(db):
    rows.insert(models.Host,
                dict(name='fresh', reported_at=rows.ago(seconds=10)),
                dict(name='stale', reported_at=rows.ago(hours=1)),
                dict(name='asleep', reported_at=rows.ago(days=2),
                     state='standby'))

    hosts = db_hosts.hosts_for_round(db, rows.ago(minutes=1))

    assert [h.name for h in hosts] == ['asleep', 'fresh']


def test_a_host_is_put_on_standby_and_back(db):
    db_reports.report_ingest(db, dict(name='h1'), [], [])
    db_hosts.host_set_state(db, 'h1', 'standby')
    assert db_hosts.host_get(db, 'h1').state == 'standby'
    db_hosts.host_set_state(db, 'h1', 'active')
    assert db_hosts.host_get(db, 'h1').state == 'active'
    with pytest.raises(exceptions.NotFound):
        db_hosts.host_set_state(db, 'h9', 'standby')
