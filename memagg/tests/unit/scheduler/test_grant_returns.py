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

"""memagg.scheduler.grant_returns on SQLite with memagg-compute replaced
at its RPC client by ComputeDouble: releases and reclaims, those the
scheduler carries out at once and those the API begins by a
compare-and-set, with bounded retries, and what recovery does with the
ones a stopped scheduler left."""
import pytest

from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.scheduler import grant_returns
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1, VM_2, VM_3


def test_release_hands_pages_back_then_frees_donors_once(three_hosts, gmc,
                                                         compute):
    compute.behaviour['a'] = 3
    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)
    compute.calls.clear()

    released = gmc.release(three_hosts, grant['uuid'])

    assert released['status'] == 'released'
    assert {s['status'] for s in released['slabs']} == {'released'}
    assert [c[0] for c in compute.calls] == [
        'reclaim_slabs', 'free_slabs', 'free_slabs']
    assert compute.calls[0] == ('reclaim_slabs', 'c', grant['uuid'], None)
    assert compute.holding() == set()
    compute.calls.clear()
    assert gmc.release(three_hosts, grant['uuid'])['status'] == 'released'
    assert compute.calls == []
    with pytest.raises(exceptions.NotFound):
        gmc.release(three_hosts, VM_3)


def test_a_consumer_that_refuses_keeps_the_grant_on_its_donors(
        three_hosts, gmc, compute):
    # Its local copy missed writes to a slab (stale): only the donors have
    # them, so nothing is freed and the grant is active again.
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    compute.reclaim_refuses.add('c')
    compute.calls.clear()

    kept = gmc.release(three_hosts, grant['uuid'])

    assert kept['status'] == 'active'
    assert 'release refused by consumer c: Conflict: slabs: slab 1 is ' \
        'stale' in kept['reason']
    assert {s['status'] for s in kept['slabs']} == {'active'}
    assert compute.called('free_slabs') == []
    assert len(compute.holding('a')) == 2
    # Released once the consumer takes the pages back.
    compute.reclaim_refuses.clear()
    assert gmc.release(three_hosts, grant['uuid'])['status'] == 'released'
    assert compute.holding() == set()


def test_a_refusal_does_not_keep_the_grant_of_a_vm_that_is_gone(
        three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    compute.reclaim_refuses.add('c')

    # Its consumer asks: the VM is gone, nobody reads its pages.
    released = gmc.release(three_hosts, grant['uuid'], consumer_host='c')

    assert released['status'] == 'failed'
    assert 'consumer c did not reclaim the slabs' in released['reason']
    assert compute.holding() == set()


def test_a_donor_that_does_not_free_is_freed_again_at_recovery(
        three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    compute.free_fails.add('a')

    released = gmc.release(three_hosts, grant['uuid'])

    assert released['status'] == 'failed'
    assert 'donor a did not free its slabs' in released['reason']
    assert {s['status'] for s in released['slabs']} == {'releasing'}
    assert len(compute.holding('a')) == 2
    compute.free_fails.clear()
    gmc.recover(three_hosts, [])
    assert compute.holding() == set()
    assert {s.status for s in db_grants.grant_get(
        three_hosts, grant['uuid']).slabs} == {'released'}


def test_reclaim_takes_from_the_vm_most_over_its_share_first(three_hosts,
                                                             gmc, compute):
    older = gmc.allocate(three_hosts, VM_1, 'c', 512)
    newer = gmc.allocate(three_hosts, VM_2, 'c', 256)
    assert {s['donor_host'] for s in older['slabs'] + newer['slabs']} == \
        {'a'}

    reclaimed = gmc.reclaim(three_hosts, 'a', 300)

    # 300 MiB, no share known: VM_1's last 4 slabs (512 MiB held against
    # VM_2's 256), then, the two even, the newer grant's last.
    assert reclaimed == 320
    assert sorted(compute.called('reclaim_slabs')) == sorted([
        ('c', older['uuid'], [4, 5, 6, 7]), ('c', newer['uuid'], [3])])
    assert ('a', newer['uuid'], [3]) in compute.called('free_slabs')
    old, slabs = reservoir_cluster.stored(three_hosts, older['uuid'])
    assert old.granted_mb == 256 and slabs[7] == (7, 'a', 'reclaimed')
    assert db_grants.grant_get(three_hosts, newer['uuid']).granted_mb == 192
    assert len(compute.holding('a')) == 7


def test_reclaim_skips_a_consumer_that_fails(three_hosts, gmc, compute):
    reservoir_cluster.host(three_hosts, 'd', 0, [(VM_3, 2048)])
    older = gmc.allocate(three_hosts, VM_1, 'c', 128)
    gmc.allocate(three_hosts, VM_3, 'd', 128)
    compute.reclaim_fails.add('d')

    assert gmc.reclaim(three_hosts, 'a', 64) == 64
    assert compute.called('reclaim_slabs')[-1] == ('c', older['uuid'], [1])
    assert gmc.reclaim(three_hosts, 'b', 64) == 0
    with pytest.raises(exceptions.NotFound):
        gmc.reclaim(three_hosts, 'nowhere', 64)


# -- releases and reclaims the API starts: begun by a compare-and-set,
# carried out later with bounded retries --------------------------------


@pytest.fixture
def waits(gmc):
    """The waits between asks, recorded instead of slept."""
    recorded = []
    gmc.sleep = recorded.append
    return recorded


def test_of_two_releases_begun_one_wins(three_hosts, gmc):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)

    first = grant_returns.begin_release(three_hosts, grant['uuid'])
    second = grant_returns.begin_release(three_hosts, grant['uuid'])

    assert (first[0], first[1].status) == (True, 'releasing')
    assert (second[0], second[1].status) == (False, 'releasing')


def test_a_pending_grant_cannot_be_released_yet(three_hosts, gmc):
    uuid = gmc.allocate(three_hosts, VM_1, 'c', 128)['uuid']
    db_grants.grant_compare_and_set(three_hosts, uuid, 'active', 'pending')

    with pytest.raises(exceptions.Conflict) as caught:
        grant_returns.begin_release(three_hosts, uuid)

    assert 'grant %s is pending' % uuid in caught.value.message
    assert db_grants.grant_get(three_hosts, uuid).status == 'pending'


def test_a_release_is_carried_out_once(three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    grant_returns.begin_release(three_hosts, grant['uuid'])

    for _ in range(2):
        done = gmc.finish_release(three_hosts, grant['uuid'])

    assert (done['status'], done['reason']) == ('released', None)
    assert compute.holding() == set()
    assert len(compute.called('free_slabs')) == 1
    assert len(compute.called('reclaim_slabs')) == 1


def test_a_silent_donor_is_asked_operation_attempts_times_then_the_release_fails(  # noqa: E501
        conf, three_hosts, gmc, compute, waits):
    conf.config(operation_attempts=3, operation_retry_interval=0.5,
                group='reservoir')
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    compute.free_fails.add('a')
    grant_returns.begin_release(three_hosts, grant['uuid'])

    done = gmc.finish_release(three_hosts, grant['uuid'])

    assert done['status'] == 'failed'
    assert 'donor a did not free its slabs' in done['reason']
    assert 'asked 3 times' in done['reason']
    assert {s['status'] for s in done['slabs']} == {'releasing'}
    assert len(compute.called('free_slabs')) == 3
    assert waits == [0.5, 1.0]
    # Freed again once the donor answers.
    compute.free_fails.clear()
    gmc.recover(three_hosts, [])
    assert compute.holding() == set()


def test_a_release_left_releasing_is_carried_out_at_recovery(
        three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    grant_returns.begin_release(three_hosts, grant['uuid'])

    gmc.recover(three_hosts, [])

    assert db_grants.grant_get(three_hosts, grant['uuid']).status == \
        'released'
    assert compute.holding() == set()


def test_a_slab_is_taken_by_one_reclaim_only(three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 256)

    first = grant_returns.begin_reclaim(three_hosts, 'a', 1024)
    second = grant_returns.begin_reclaim(three_hosts, 'a', 1024)

    assert first == ({grant['uuid']: [0, 1, 2, 3]}, 256)
    assert second == ({}, 0)
    assert gmc.finish_reclaim(three_hosts, 'a', first[0]) == 256
    assert gmc.finish_reclaim(three_hosts, 'a', first[0]) == 0
    assert compute.holding() == set()
    assert len(compute.called('free_slabs')) == 1
    stored = db_grants.grant_get(three_hosts, grant['uuid'])
    assert (stored.granted_mb, {s.status for s in stored.slabs}) == (
        0, {'reclaimed'})


def test_a_consumer_that_never_reclaims_keeps_its_slabs(
        conf, three_hosts, gmc, compute, waits):
    conf.config(operation_attempts=2, group='reservoir')
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    compute.reclaim_fails.add('c')
    taken, _mb = grant_returns.begin_reclaim(three_hosts, 'a', 64)

    assert gmc.finish_reclaim(three_hosts, 'a', taken) == 0

    stored = db_grants.grant_get(three_hosts, grant['uuid'])
    assert {s.status for s in stored.slabs} == {'active'}
    assert 'consumer c did not reclaim them (asked 2 times)' in \
        stored.reason
    assert len(compute.called('reclaim_slabs')) == 2
    assert len(compute.holding('a')) == 2


def test_a_reclaim_left_reclaiming_is_carried_out_at_recovery(
        three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    grant_returns.begin_reclaim(three_hosts, 'a', 64)

    gmc.recover(three_hosts, [])

    assert [s.status for s in db_grants.grant_get(
        three_hosts, grant['uuid']).slabs] == ['active', 'reclaimed']
    assert compute.holding('a') == {(grant['uuid'], 0)}


def test_a_released_grant_has_no_slab_to_reclaim(three_hosts, gmc):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    grant_returns.begin_release(three_hosts, grant['uuid'])

    assert grant_returns.begin_reclaim(three_hosts, 'a', 64) == ({}, 0)
