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

"""memagg.db.reports on SQLite: report_ingest_batch with a batch of several
hosts' reports, stored again as a redelivery would, and out of order; a
report naming a column there is not; an instance gone and reported again."""
import datetime

import pytest
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import facade
from memagg.db import instances as db_instances
from memagg.db import listings as db_listings
from memagg.db import reports as db_reports
from memagg.db.sqlalchemy import models

T0 = datetime.datetime(2026, 11, 27, 12, 0, 0, 250000)


def _report(host, period, uuids, wss_mb=300):
    at = T0 + datetime.timedelta(seconds=10 * period)
    return dict(
        host=dict(name=host),
        instances=[dict(uuid=u, booked_mb=1024, current_mb=1024,
                        wss_mb=wss_mb) for u in uuids],
        samples=[dict(instance_uuid=u, sampled_at=at, wss_mb=wss_mb,
                      current_mb=1024, estimator='libvirt') for u in uuids],
        reported_at=at, host_sample=dict(cpu_util=0.5, mem_used_mb=2048))


def _rows(context, model, *columns):
    with facade.reader().connection.using(context) as conn:
        table = model.__table__
        return sorted(tuple(row) for row in conn.execute(
            sa.select(*(table.c[c] for c in columns))))


def test_batch_of_several_hosts_is_stored_once_each(db):
    batch = [_report('h1', 0, ['a', 'b']), _report('h2', 0, ['c']),
             _report('h1', 1, ['a'], wss_mb=400)]

    db_reports.report_ingest_batch(db, batch)
    # A redelivered batch, and one of its reports alone, store nothing new.
    db_reports.report_ingest_batch(db, batch)
    db_reports.report_ingest_batch(db, batch[1:2])

    at = [T0, T0 + datetime.timedelta(seconds=10)]
    assert _rows(db, models.WssSample, 'instance_uuid', 'sampled_at') == [
        ('a', at[0]), ('a', at[1]), ('b', at[0]), ('c', at[0])]
    assert _rows(db, models.HostSample, 'host', 'sampled_at') == [
        ('h1', at[0]), ('h1', at[1]), ('h2', at[0])]
    # h1 takes its newest report's state: b is gone, a has its new WSS.
    assert db_instances.instance_get(db, 'b').status == 'gone'
    assert db_instances.instance_get(db, 'a').wss_mb == 400
    assert db_instances.instance_get(db, 'c').host == 'h2'
    assert _rows(db, models.Host, 'name', 'reported_at') == [
        ('h1', at[1]), ('h2', at[0])]


def test_late_report_stores_its_samples_not_its_state(db):
    db_reports.report_ingest_batch(db, [_report('h', 1, ['a'], wss_mb=400)])

    db_reports.report_ingest_batch(db, [_report('h', 0, ['b'])])

    assert db_instances.instance_get(db, 'a').status == 'active'
    assert db_instances.instance_get(db, 'a').wss_mb == 400
    with pytest.raises(exceptions.NotFound):
        db_instances.instance_get(db, 'b')
    assert [u for u, _ in _rows(db, models.WssSample, 'instance_uuid',
                                'sampled_at')] == ['a', 'b']
    assert len(_rows(db, models.HostSample, 'host', 'sampled_at')) == 2


def test_bad_report_in_a_batch_stores_none_and_names_the_field(db):
    bad = _report('h2', 0, ['c'])
    bad['samples'][0]['colour'] = 'red'

    with pytest.raises(exceptions.InvalidParameter) as error:
        db_reports.report_ingest_batch(db, [_report('h1', 0, ['a']), bad])

    assert "'samples'" in str(error.value)
    assert 'colour' in str(error.value)
    assert _rows(db, models.Host, 'name') == []


def test_empty_batch_stores_nothing(db):
    db_reports.report_ingest_batch(db, [])

    assert _rows(db, models.Host, 'name') == []


def test_report_with_unknown_column_names_it(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_reports.report_ingest(db, dict(name='h'),
                                 [dict(uuid='a', colour='red')], [])

    assert "'instances'" in str(error.value)
    assert 'colour' in str(error.value)
    assert db_listings.list_resources(db, 'hosts') == []


def test_gone_instance_comes_back_when_reported_again(db):
    db_reports.report_ingest(db, dict(name='h'), [dict(uuid='a')], [])
    db_reports.report_ingest(db, dict(name='h'), [], [])
    assert db_instances.instance_get(db, 'a').status == 'gone'

    db_reports.report_ingest(db, dict(name='h'), [dict(uuid='a')], [])

    assert db_instances.instance_get(db, 'a').status == 'active'
