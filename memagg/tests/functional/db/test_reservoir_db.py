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

"""The reservoir's DB calls on SQLite, MariaDB and PostgreSQL (real
servers): two allocations at once never lend a donor's memory twice nor
pass a VM's cap, because the reservation locks the instance's and the
donors' rows, no move between the tiers takes a migrating VM's slabs
but its migration's own, and no release begins while it migrates
(memagg-compute is stood in for at its RPC client: the point here is the
database)."""
import concurrent.futures
import threading

import pytest

from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import listings as db_listings
from memagg.db import migrations as db_migrations
from memagg.db import tier_moves as db_tier_moves
from memagg.drivers.reservoir import donors
from memagg.scheduler import reservoir
from memagg.scheduler import rpcapi
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler import compute_double
from memagg.tests.unit.scheduler.reservoir_fixtures import reservoir_opts  # noqa: F401,E501

pytestmark = pytest.mark.functional

VMS = ['20000000-0000-4000-8000-00000000000%d' % i for i in range(4)]


class _Rendezvous(donors.LargestFirst):
    """largest_first that waits (up to 2 s) for the other allocation to
    reach the same point: without the row locks both would then see the
    donor's memory free."""

    def __init__(self, parties):
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=2)

    def _pick(self, request_slabs, room, rng):
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            pass
        return super()._pick(request_slabs, room, rng)


@pytest.fixture
def ctxt(reservoir_opts, any_db, admin_context):  # noqa: F811
    reservoir_cluster.host(admin_context, 'c', 0, [(vm, 4096) for vm in VMS])
    # Room for 8 slabs of 64 MiB.
    reservoir_cluster.host(admin_context, 'a', 512)
    return admin_context


def _allocate_at_once(conf, ctxt, requests):
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=_Rendezvous(len(requests)))

    def allocate(request):
        try:
            return gmc.allocate(ctxt, request[0], 'c', request[1])
        except rpcapi.RemoteMemoryUnavailable as exc:
            return exc

    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        return compute, list(pool.map(allocate, requests))


def test_two_allocations_at_once_do_not_overcommit_a_donor(conf, ctxt):
    compute, results = _allocate_at_once(conf, ctxt, [(VMS[0], 384),
                                                      (VMS[1], 384)])

    granted = [r['granted_mb'] for r in results if isinstance(r, dict)]
    assert sorted(granted) == [128, 384]
    # What a had no room for is in the local tier: both have 6 slabs.
    assert [len(r['slabs']) for r in results] == [6, 6]
    lent = db_grants.reservoir_summary(ctxt)['hosts']
    assert [h['lent_mb'] for h in lent if h['host'] == 'a'] == [512]
    assert len(compute.holding('a')) == 8


def test_two_allocations_for_one_vm_at_once_keep_its_cap(conf, ctxt):
    conf.config(max_remote_ratio=0.1, group='reservoir')
    # Cap 409 MiB: 6 slabs in all, whatever the interleaving.
    _compute, results = _allocate_at_once(conf, ctxt, [(VMS[2], 256),
                                                       (VMS[2], 256)])

    granted = sorted(r['granted_mb'] for r in results
                     if isinstance(r, dict))
    assert granted == [128, 256]
    assert sum(g.granted_mb for g in db_listings.list_resources(
        ctxt, 'grants', filters={'instance_uuid': VMS[2]})) == 384


def test_grant_rows_round_trip(conf, ctxt):
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    grant = gmc.allocate(ctxt, VMS[3], 'c', 192)

    stored = db_grants.grant_get(ctxt, grant['uuid'])
    assert (stored.slab_size_mb, stored.partial, stored.status) == (
        64, False, 'active')
    assert [(s.endpoint, s.remote_addr, s.rkey) for s in stored.slabs] == [
        ('tcp://a:7450', 0x10000000 * (i + 1), 1000 + i) for i in range(3)]
    assert gmc.reclaim(ctxt, 'a', 64) == 64
    reclaimed = db_grants.grant_get(ctxt, grant['uuid'])
    assert reclaimed.granted_mb == 128
    assert [s.status for s in reclaimed.slabs] == [
        'active', 'active', 'reclaimed']
    assert gmc.release(ctxt, grant['uuid'])['status'] == 'released'
    assert db_grants.grants_in_status(ctxt, ('active', 'pending')) == []


def test_slabs_round_trip_between_the_tiers(conf, ctxt):
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    grant = gmc.allocate(ctxt, VMS[3], 'c', 192)

    assert gmc.move_slabs(ctxt, grant['uuid'], 'c', demote=[1, 2]) == {
        'demoted': [1, 2], 'promoted': []}
    assert db_grants.grant_get(ctxt, grant['uuid']).granted_mb == 64
    assert gmc.move_slabs(ctxt, grant['uuid'], 'c', demote=[0],
                          promote=[2]) == {'demoted': [0], 'promoted': [2]}
    stored = db_grants.grant_get(ctxt, grant['uuid'])
    assert [s.status for s in stored.slabs] == [
        'reclaimed', 'reclaimed', 'active']
    assert stored.granted_mb == 64
    assert db_grants.reservoir_summary(ctxt)['hosts'][0]['lent_mb'] == 64


def test_a_migrating_vm_s_slabs_move_for_its_migration_only(conf, ctxt):
    """Once a VM's migration is queued, no demotion, promotion or reclaim
    takes its slabs (its destination reads them on their donors), but the
    promotions of that migration; the migration's look at them reads the
    committed states."""
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    grant = gmc.allocate(ctxt, VMS[2], 'c', 192)
    uuid = grant['uuid']
    gmc.move_slabs(ctxt, uuid, 'c', demote=[1])
    _, migration = db_migrations.migration_request(ctxt, VMS[2], 'c', 'd',
                                                   'operator')

    with pytest.raises(exceptions.Conflict, match='in migration %s' %
                       migration.uuid):
        db_tier_moves.slabs_take_for_demotion(ctxt, uuid, 'c', [0])
    with pytest.raises(exceptions.Conflict, match='in migration %s' %
                       migration.uuid):
        db_tier_moves.slabs_begin_promotion(
            ctxt, uuid, 'c', [1], gmc._reported_since(), gmc._select('c'))
    assert db_grants.slabs_take_for_reclaim(ctxt, 'a', 512) == ({}, 0)
    assert db_tier_moves.slabs_of_migrating_instance(ctxt, VMS[2], 'c') == {
        uuid: {'active': [0, 2], 'reclaimed': [1]}}

    assert db_tier_moves.slabs_begin_promotion(
        ctxt, uuid, 'c', [1], gmc._reported_since(), gmc._select('c'),
        migration.id) == {'a': [1]}
    assert db_tier_moves.slabs_of_migrating_instance(ctxt, VMS[2], 'c') == {
        uuid: {'active': [0, 2], 'promoting': [1]}}
    # Another consumer's view holds none of its grants.
    assert db_tier_moves.slabs_of_migrating_instance(ctxt, VMS[2], 'd') == {}
    # Nor is it released, whoever asks.
    for asking in (None, 'c', 'd'):
        with pytest.raises(exceptions.Conflict, match='in migration %s' %
                           migration.uuid):
            db_grants.grant_begin_release(ctxt, uuid, asking)
    assert db_grants.grant_get(ctxt, uuid).status == 'active'


def test_a_release_begins_once_for_its_consumer(conf, ctxt):
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    uuid = gmc.allocate(ctxt, VMS[3], 'c', 64)['uuid']

    won, grant = db_grants.grant_begin_release(ctxt, uuid, 'd')
    assert (won, grant.status) == (False, 'active')
    won, grant = db_grants.grant_begin_release(ctxt, uuid, 'c')
    assert (won, grant.status) == (True, 'releasing')
    won, grant = db_grants.grant_begin_release(ctxt, uuid)
    assert (won, grant.status) == (False, 'releasing')
    # A refusal of its consumer puts it back, with the reason.
    won, grant = db_grants.grant_release_refused(ctxt, uuid, 'kept')
    assert (won, grant.status, grant.reason) == (True, 'active', 'kept')
    assert db_grants.grant_release_refused(ctxt, uuid, 'again')[0] is False


def test_grants_stay_within_the_room_of_their_hosts_local_copies(conf, ctxt):
    reservoir_cluster.host(ctxt, 'c', 0, [(vm, 4096) for vm in VMS],
                           local_room_mb=160)
    gmc = reservoir.Reservoir(conf.conf,
                              compute_api=compute_double.ComputeDouble(),
                              selection=donors.LargestFirst())

    first = gmc.allocate(ctxt, VMS[0], 'c', 64)
    second = gmc.allocate(ctxt, VMS[1], 'c', 256)

    assert (first['granted_mb'], second['granted_mb']) == (64, 64)
    assert 'c has room for 96 MiB more of local copies' in second['reason']
    with pytest.raises(rpcapi.RemoteMemoryUnavailable, match='not a slab'):
        gmc.allocate(ctxt, VMS[2], 'c', 64)
