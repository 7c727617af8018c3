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

"""State changes as compare-and-sets, on SQLite, MariaDB and PostgreSQL:
of concurrent callers one only moves a grant or an audit on, or takes a
slab for a reclaim, so the work that follows is done once."""
import uuid

import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import migrations as db_migrations
from memagg.db.sqlalchemy import models
from memagg.tests import concurrency
from memagg.tests.unit.db import rows


@pytest.fixture
def grants(any_db):
    """Two active grants lending from host-2: the older with slabs 0-1,
    the newer with slabs 0-2 (256 MiB each); their uuids, oldest first."""
    uuids = []
    for age, count in ((60, 2), (30, 3)):
        uuids.append(str(uuid.uuid4()))
        (grant_id,) = rows.insert(models.Grant, dict(
            uuid=uuids[-1], created_at=rows.ago(seconds=age)))
        rows.insert(models.Slab, *[dict(grant_id=grant_id, index=i,
                                        status='active')
                                   for i in range(count)])
    return uuids


def test_of_concurrent_compare_and_sets_one_wins(grants, admin_context):
    older, _newer = grants

    results = concurrency.at_once(lambda: db_grants.grant_compare_and_set(
        admin_context, older, 'active', 'releasing'))

    assert sorted(won for won, _grant in results) == \
        [False] * (concurrency.CALLERS - 1) + [True]
    # Each caller sees the grant as it is after its statement.
    assert {grant.status for _won, grant in results} == {'releasing'}
    assert db_grants.grant_get(admin_context, older).status == 'releasing'


def test_a_compare_and_set_from_another_state_changes_nothing(
        grants, admin_context):
    older, _newer = grants

    won, grant = db_grants.grant_compare_and_set(admin_context, older,
                                                 'releasing', 'released')

    assert (won, grant.status) == (False, 'active')
    with pytest.raises(exceptions.NotFound):
        db_grants.grant_compare_and_set(admin_context, str(uuid.uuid4()),
                                        'active', 'releasing')


def test_concurrent_reclaims_take_each_slab_once(grants, admin_context):
    older, newer = grants

    results = concurrency.at_once(lambda: db_grants.slabs_take_for_reclaim(
        admin_context, 'host-2', 512))

    taken = [(grant, i) for by_grant, _mb in results
             for grant, indexes in by_grant.items() for i in indexes]
    assert sorted(taken) == sorted(
        [(older, 0), (older, 1)] + [(newer, i) for i in range(3)])
    assert sum(mb for _taken, mb in results) == 5 * 256
    assert {s.status for g in grants for s in db_grants.grant_get(
        admin_context, g).slabs} == {'reclaiming'}


def _vm_of(grant_uuid, admin_context):
    return db_grants.grant_get(admin_context, grant_uuid).instance_uuid


def test_a_reclaim_takes_from_the_vms_most_over_their_share_first(
        grants, admin_context):
    """Without shares a VM's excess is all it holds on donors: the newer
    grant's VM (768 MiB) gives a slab, then, even with the older's (512),
    its newer slab, then the older's VM one; a slab at a time, the
    highest indexes first."""
    older, newer = grants

    assert db_grants.slabs_take_for_reclaim(admin_context, 'host-2',
                                            600) == (
        {newer: [1, 2], older: [1]}, 768)
    assert db_grants.slabs_take_for_reclaim(admin_context, 'host-2',
                                            1) == ({newer: [0]}, 256)


def test_a_vm_within_its_share_gives_slabs_last(grants, admin_context):
    older, newer = grants
    # The newer grant's VM may keep all three of its slabs on donors, the
    # older's none of its two.
    rows.insert(models.Instance,
                dict(uuid=_vm_of(newer, admin_context), l1_share_mb=768),
                dict(uuid=_vm_of(older, admin_context), l1_share_mb=0))

    assert db_grants.slabs_take_for_reclaim(admin_context, 'host-2',
                                            600) == (
        {older: [0, 1], newer: [2]}, 768)


def test_a_grant_being_released_lends_no_slab_to_a_reclaim(
        grants, admin_context):
    older, newer = grants
    db_grants.grant_compare_and_set(admin_context, newer, 'active',
                                    'releasing')

    assert db_grants.slabs_take_for_reclaim(admin_context, 'host-2',
                                            10000) == ({older: [0, 1]}, 512)


def test_a_reclaim_that_failed_gives_the_slabs_back(grants, admin_context):
    older, newer = grants
    db_grants.slabs_take_for_reclaim(admin_context, 'host-2', 10000)
    db_grants.grant_compare_and_set(admin_context, older, 'active',
                                    'releasing')

    assert db_grants.grant_slabs_reclaim_failed(
        admin_context, newer, [1, 2], reason='consumer gone') is True
    # Released meanwhile: the slabs stay the reclaim's, to free.
    assert db_grants.grant_slabs_reclaim_failed(
        admin_context, older, [0, 1]) is False
    stored = db_grants.grant_get(admin_context, newer)
    assert ([s.status for s in stored.slabs], stored.reason) == (
        ['reclaiming', 'active', 'active'], 'consumer gone')
    assert db_grants.grant_slabs_reclaimed(
        admin_context, newer, [0, 1]) == 256
    assert db_grants.slabs_reclaiming(admin_context) == {
        (older, 'host-2'): [0, 1]}


def test_of_concurrent_audit_executions_one_wins(any_db, admin_context):
    audit = str(uuid.uuid4())
    rows.insert(models.Audit, dict(uuid=audit, state='recommended'))

    results = concurrency.at_once(lambda: db_audits.audit_compare_and_set(
        admin_context, audit, 'recommended', 'executing'))

    assert sorted(results) == [(False, 'executing')] * (
        concurrency.CALLERS - 1) + [(True, 'executing')]
    assert db_audits.audit_get(admin_context, audit).state == 'executing'
    with pytest.raises(exceptions.NotFound):
        db_audits.audit_compare_and_set(admin_context, str(uuid.uuid4()),
                                        'recommended', 'executing')


def test_of_concurrent_migration_requests_one_is_queued(any_db,
                                                        admin_context):
    # POST /v1/migrations stores the request with the instance's row
    # locked: the others find the first one's migration queued.
    vm = str(uuid.uuid4())
    rows.insert(models.Instance, dict(uuid=vm, host='host-1'))

    def request():
        try:
            return db_migrations.migration_request(
                admin_context, vm, 'host-1', 'host-2', 'requested')[1].uuid
        except exceptions.Conflict as exc:
            return exc.message
    results = concurrency.at_once(request)

    queued = [r for r in results if 'already has migration' not in r]
    assert len(queued) == 1, results
    assert all('already has migration %s queued' % queued[0] in r
               for r in results if r not in queued)
