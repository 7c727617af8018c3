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

"""memagg.db.listings on SQLite, MariaDB and PostgreSQL (real servers):
pages by marker, sort orders with NULLs and ties, filters and time ranges."""
import pytest

from memagg.common import exceptions
from memagg.db import listings as db_listings
from memagg.db.sqlalchemy import models
from memagg.tests.unit.db import rows

pytestmark = pytest.mark.functional


def _all_pages(context, resource, limit, **kwargs):
    """Follow markers page by page; return the pages' keys."""
    key = db_listings.LISTINGS[resource]['key']
    pages, marker = [], None
    while True:
        page = db_listings.list_resources(context, resource, limit=limit,
                                          marker=marker, **kwargs)
        if not page:
            return pages
        assert len(page) <= limit
        pages.append([getattr(row, key) for row in page])
        marker = pages[-1][-1]


@pytest.fixture
def instances(any_db, admin_context):
    """Nine instances with tied booked_mb, NULL wss_mb and one created_at."""
    created = rows.ago(hours=1)
    booked = [512, 256, 512, 1024, 256, 512, 2048, 256, 512]
    wss = [None, 100, 300, None, 100, None, 50, 300, 200]
    rows.insert(models.Instance, *[
        dict(booked_mb=b, wss_mb=w, created_at=created)
        for b, w in zip(booked, wss)])
    everything = db_listings.list_resources(admin_context, 'instances',
                                            sort_keys=['id'])
    return [(i.id, i.uuid, i.booked_mb, i.wss_mb) for i in everything]


def _expected(instances, column, direction):
    """Python's reading of the order: NULL lowest, ties by id."""
    index = {'booked_mb': 2, 'wss_mb': 3}[column]
    if direction == 'asc':
        ordered = sorted(instances, key=lambda i: (
            i[index] is not None, i[index] or 0, i[0]))
    else:
        ordered = sorted(instances, key=lambda i: (
            i[index] is None, -(i[index] or 0), -i[0]))
    return [i[1] for i in ordered]


def test_pages_cover_every_row_once_in_order(admin_context, instances):
    # One database for every combination: building one per case is what
    # would make this test slow.
    for column in ('booked_mb', 'wss_mb'):
        for direction in ('asc', 'desc'):
            for limit in (1, 2, 4):
                pages = _all_pages(admin_context, 'instances', limit,
                                   sort_keys=[column], sort_dirs=[direction])

                case = (column, direction, limit)
                assert [len(p) for p in pages[:-1]] == (
                    [limit] * (len(pages) - 1)), case
                assert sum(pages, []) == _expected(
                    instances, column, direction), case


def test_default_order_breaks_created_at_ties_by_id(admin_context,
                                                    instances):
    pages = _all_pages(admin_context, 'instances', 4)

    assert sum(pages, []) == [i[1] for i in sorted(instances)]


def test_two_sort_keys_with_mixed_directions(admin_context, instances):
    page = db_listings.list_resources(admin_context, 'instances',
                                      sort_keys=['booked_mb', 'wss_mb'],
                                      sort_dirs=['desc', 'asc'])

    got = [(i.booked_mb, i.wss_mb) for i in page]
    assert got == [(2048, 50), (1024, None), (512, None), (512, None),
                   (512, 200), (512, 300), (256, 100), (256, 100),
                   (256, 300)]


def test_filters_and_time_range(admin_context, any_db):
    at = {minutes: rows.ago(minutes=minutes) for minutes in (30, 20, 10)}
    rows.insert(models.WssSample, *[
        dict(instance_uuid=uuid, sampled_at=at[minutes])
        for uuid in ('a', 'b') for minutes in (30, 20, 10)])

    got = db_listings.list_resources(admin_context, 'wss_samples',
                                     filters={'instance_uuid': 'a'},
                                     since=at[20], until=at[10])

    assert [(s.instance_uuid, s.sampled_at) for s in got] == [
        ('a', at[20]), ('a', at[10])]


def test_non_numeric_marker_of_integer_key_is_not_found(admin_context,
                                                        any_db):
    rows.insert(models.Service, {})

    with pytest.raises(exceptions.MarkerNotFound) as error:
        db_listings.list_resources(admin_context, 'services', marker='abc')
    assert "'marker'" in str(error.value)
