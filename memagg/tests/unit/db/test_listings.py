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

"""memagg.db.listings on SQLite: filters, markers, sort keys and
directions, limits and time ranges, each bad argument named; and the
NotFound every resource's get raises for a missing row. The same listings
run on MariaDB and PostgreSQL in
memagg/tests/functional/db/test_listings.py."""
import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import hosts as db_hosts
from memagg.db import instances as db_instances
from memagg.db import listings as db_listings
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows


def _uuids(page):
    return [row.uuid for row in page]


def test_unknown_filter_names_the_field(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'instances', filters={'flavor': 'm1'})

    assert "'flavor'" in str(error.value)
    assert 'host, project_id, status' in str(error.value)


def test_filter_selects_matching_rows(db):
    rows.insert(models.Instance, dict(uuid='a', project_id='p1'),
                dict(uuid='b', project_id='p2'),
                dict(uuid='c', project_id='p1', host='host-2'))

    page = db_listings.list_resources(db, 'instances',
                                      filters={'project_id': 'p1',
                                               'host': 'host-2'})

    assert _uuids(page) == ['c']


def test_unknown_marker_is_marker_not_found(db):
    rows.insert(models.Instance, {})

    with pytest.raises(exceptions.MarkerNotFound) as error:
        db_listings.list_resources(db, 'instances', marker='no-such-uuid')

    assert "'marker'" in str(error.value)
    assert 'no-such-uuid' in str(error.value)


def test_marker_is_the_listing_key(db):
    rows.insert(models.Host, dict(name='a'), dict(name='b'), dict(name='c'))

    page = db_listings.list_resources(db, 'hosts', marker='a', limit=1)

    assert [h.name for h in page] == ['b']


def test_last_page_is_empty_after_last_marker(db):
    rows.insert(models.Host, dict(name='a'))

    assert db_listings.list_resources(db, 'hosts', marker='a') == []


def test_unknown_sort_key_names_the_choices(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'hosts', sort_keys=['secret'])

    assert "'sort_key'" in str(error.value)
    assert 'memory_mb' in str(error.value)


def test_bad_sort_dir(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'hosts', sort_keys=['name'],
                                   sort_dirs=['up'])

    assert "'sort_dir'" in str(error.value)
    assert 'asc or desc' in str(error.value)


def test_more_sort_dirs_than_keys(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'hosts', sort_keys=['name'],
                                   sort_dirs=['asc', 'desc'])

    assert "'sort_dir'" in str(error.value)


def test_missing_sort_dirs_repeat_the_last(db):
    rows.insert(models.Host, dict(name='a', memory_mb=1),
                dict(name='b', memory_mb=2), dict(name='c', memory_mb=2))

    page = db_listings.list_resources(db, 'hosts',
                                      sort_keys=['memory_mb', 'name'],
                                      sort_dirs=['desc'])

    assert [h.name for h in page] == ['c', 'b', 'a']


def test_negative_limit(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'hosts', limit=-1)

    assert "'limit'" in str(error.value)


def test_limit_zero_returns_nothing(db):
    rows.insert(models.Host, {})

    assert db_listings.list_resources(db, 'hosts', limit=0) == []


def test_unknown_resource(db):
    with pytest.raises(exceptions.InvalidParameter) as error:
        db_listings.list_resources(db, 'flavors')

    assert "'resource'" in str(error.value)


def test_time_range_bounds_created_at(db):
    at = {hours: rows.ago(hours=hours) for hours in (5, 4, 3, 2, 1)}
    rows.insert(models.Audit, *[
        dict(uuid='a%d' % h, created_at=t) for h, t in at.items()])

    page = db_listings.list_resources(db, 'audits', since=at[4], until=at[2])

    assert _uuids(page) == ['a4', 'a3', 'a2']


def test_get_missing_row_is_not_found(db):
    for get, resource in ((db_hosts.host_get, 'Host'),
                          (db_instances.instance_get, 'Instance'),
                          (db_grants.grant_get, 'Grant'),
                          (db_audits.audit_get, 'Audit'),
                          (db_migrations.migration_get, 'Migration')):
        with pytest.raises(exceptions.NotFound) as error:
            get(db, 'missing')
        assert str(error.value) == '%s missing could not be found.' % resource
