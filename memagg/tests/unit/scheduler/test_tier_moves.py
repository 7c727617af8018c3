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

"""memagg.scheduler.tier_moves (and memagg.db.tier_moves) on SQLite with
memagg-compute replaced at its RPC client by ComputeDouble: demotions as
reclaims the consumer asked for, promotions to donors with room, what a
failed donor or consumer leaves, and the recovery of promotions a stopped
scheduler left."""
import pytest

from memagg.common import exceptions
from memagg.db import migrations as db_migrations
from memagg.db import tier_moves as db_tier_moves
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1


@pytest.fixture
def grant(three_hosts, gmc):
    """VM_1's grant of 4 slabs on a, consumed by c."""
    return gmc.allocate(three_hosts, VM_1, 'c', 256)


def _slabs(ctxt, uuid):
    return reservoir_cluster.stored(ctxt, uuid)[1]


def test_demotion_reclaims_then_frees_on_the_donor(three_hosts, gmc,
                                                   compute, grant):
    compute.calls.clear()

    moved = gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[3, 1])

    assert moved == {'demoted': [1, 3], 'promoted': []}
    assert [c[0] for c in compute.calls] == ['reclaim_slabs', 'free_slabs']
    assert compute.called('reclaim_slabs') == [('c', grant['uuid'], [1, 3])]
    assert compute.holding('a') == {(grant['uuid'], 0), (grant['uuid'], 2)}
    assert _slabs(three_hosts, grant['uuid']) == [
        (0, 'a', 'active'), (1, 'a', 'reclaimed'), (2, 'a', 'active'),
        (3, 'a', 'reclaimed')]
    stored, _ = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert stored.granted_mb == 128
    # A slab demoted already is skipped.
    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[1]) == {
        'demoted': [], 'promoted': []}


def test_promotion_gives_a_demoted_slab_a_donor_again(three_hosts, gmc,
                                                      compute, grant):
    gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[1, 3])
    compute.calls.clear()

    moved = gmc.move_slabs(three_hosts, grant['uuid'], 'c', promote=[3, 1])

    assert moved == {'demoted': [], 'promoted': [1, 3]}
    # Prepared on the donor with the most room first, then copied there
    # by the consumer, slab by slab.
    assert [c[0] for c in compute.calls] == [
        'prepare_slabs', 'promote_slab', 'promote_slab']
    assert compute.called('promote_slab') == [
        ('c', grant['uuid'], 1), ('c', grant['uuid'], 3)]
    stored, slabs = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert stored.granted_mb == 256
    assert [s for _, _, s in slabs] == ['active'] * 4
    assert {(s.index, s.endpoint) for s in stored.slabs if s.index in (1, 3)
            } == {(i, 'tcp://%s:7450' % slabs[i][1]) for i in (1, 3)}
    assert compute.holding() == {(grant['uuid'], i) for i in range(4)}


def test_a_slab_born_in_the_local_tier_goes_to_a_donor_new_to_the_grant(
        three_hosts, gmc, compute):
    # a has room for 2 of the 4 slabs, b none: 2 in the local tier.
    reservoir_cluster.host(three_hosts, 'a', 128)
    reservoir_cluster.host(three_hosts, 'b', 0)
    grant = gmc.allocate(three_hosts, VM_1, 'c', 256)
    assert _slabs(three_hosts, grant['uuid']) == [
        (0, 'a', 'active'), (1, 'a', 'active'), (2, 'c', 'reclaimed'),
        (3, 'c', 'reclaimed')]
    # a has room again, but lends the grant a region already: a donor
    # lends a grant's new slabs only when it lends it nothing.
    reservoir_cluster.host(three_hosts, 'a', 1024)
    compute.calls.clear()
    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c',
                          promote=[2, 3]) == {'demoted': [], 'promoted': []}
    assert compute.calls == []

    reservoir_cluster.host(three_hosts, 'b', 512)
    moved = gmc.move_slabs(three_hosts, grant['uuid'], 'c', promote=[3, 2])

    assert moved == {'demoted': [], 'promoted': [2, 3]}
    assert compute.called('prepare_slabs') == [
        ('b', grant['uuid'], 64, [2, 3])]
    assert _slabs(three_hosts, grant['uuid']) == [
        (0, 'a', 'active'), (1, 'a', 'active'), (2, 'b', 'active'),
        (3, 'b', 'active')]
    stored, _ = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert stored.granted_mb == 256


def test_demote_and_promote_in_one_move(three_hosts, gmc, compute, grant):
    gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[2])

    moved = gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[0],
                           promote=[2])

    assert moved == {'demoted': [0], 'promoted': [2]}
    assert [s for _, _, s in _slabs(three_hosts, grant['uuid'])] == [
        'reclaimed', 'active', 'active', 'active']


def test_a_slab_not_in_the_local_copy_is_not_promoted(three_hosts, gmc,
                                                      compute, grant):
    compute.calls.clear()

    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c',
                          promote=[0, 9]) == {'demoted': [], 'promoted': []}
    assert compute.calls == []


def test_no_donor_with_room_leaves_the_slab_local(three_hosts, gmc, compute,
                                                  grant):
    gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[3])
    # Only c itself reports room now.
    reservoir_cluster.host(three_hosts, 'a', 0, age_s=0)
    reservoir_cluster.host(three_hosts, 'b', 0, age_s=0)
    compute.calls.clear()

    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c', promote=[3]) == {
        'demoted': [], 'promoted': []}
    assert compute.calls == []
    assert _slabs(three_hosts, grant['uuid'])[3] == (3, 'a', 'reclaimed')


@pytest.mark.parametrize('failing', ['donor', 'consumer'])
def test_a_failed_promotion_frees_the_donor_and_stays_local(
        three_hosts, gmc, compute, grant, failing):
    gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[3])
    if failing == 'donor':
        compute.behaviour['a'] = 'fail'
        compute.behaviour['b'] = 'fail'
    else:
        compute.promote_fails.add('c')

    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c', promote=[3]) == {
        'demoted': [], 'promoted': []}

    stored, slabs = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert slabs[3][2] == 'reclaimed' and stored.granted_mb == 192
    assert 'promotion of slabs [3]' in stored.reason
    assert (grant['uuid'], 3) not in compute.holding()
    frees = [c for c in compute.called('free_slabs') if c[2] == [3]]
    assert frees, compute.calls


def test_moves_of_a_grant_another_host_consumes_are_refused(
        three_hosts, gmc, compute, grant):
    with pytest.raises(exceptions.Conflict):
        db_tier_moves.slabs_take_for_demotion(three_hosts, grant['uuid'],
                                              'a', [0])
    compute.calls.clear()
    assert gmc.move_slabs(three_hosts, grant['uuid'], 'a', demote=[0]) == {
        'demoted': [], 'promoted': []}
    assert compute.calls == []


def test_no_slab_moves_while_its_vm_migrates(three_hosts, gmc, compute,
                                             grant):
    db_migrations.migration_request(three_hosts, VM_1, 'c', 'b',
                                    'operator')
    compute.calls.clear()

    assert gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[0]) == {
        'demoted': [], 'promoted': []}
    assert compute.calls == []
    assert _slabs(three_hosts, grant['uuid'])[0] == (0, 'a', 'active')


def test_recovery_copies_prepared_promotions_and_frees_the_rest(
        three_hosts, gmc, compute, grant):
    gmc.move_slabs(three_hosts, grant['uuid'], 'c', demote=[1, 2])
    # A scheduler that stopped after choosing donors for 1 and 2 and
    # recording where a prepared 1 (2 not yet).
    assigned = db_tier_moves.slabs_begin_promotion(
        three_hosts, grant['uuid'], 'c', [1, 2],
        gmc._reported_since(), gmc._select('c'))
    (donor, indexes), = assigned.items()
    assert indexes == [1, 2]
    reply = compute.prepare_slabs(three_hosts, donor, grant['uuid'],
                                  '0' * 64, 64, [1, 2], timeout=1)
    endpoint = reply['endpoint']
    addr = reply['slabs'][0]['remote_addr']
    assert db_tier_moves.slab_promotion_prepared(
        three_hosts, grant['uuid'], 1, endpoint, addr)
    compute.calls.clear()

    gmc.recover(three_hosts, [])

    assert _slabs(three_hosts, grant['uuid'])[1:3] == [
        (1, donor, 'active'), (2, donor, 'reclaimed')]
    assert compute.called('promote_slab') == [('c', grant['uuid'], 1)]
    assert (donor, grant['uuid'], [2]) in compute.called('free_slabs')
    assert db_tier_moves.slabs_promoting(three_hosts) == {}
