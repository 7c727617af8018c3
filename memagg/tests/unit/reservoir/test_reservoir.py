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

"""memagg.scheduler.reservoir on SQLite with memagg-compute replaced at its
RPC client by ComputeDouble (no real donors here: see
memagg/tests/functional/test_reservoir_rabbit.py for the processes):
allocation within the per-VM cap, partial grants and why, donors that fail
or run out of memory, clean-up after failures, release, reclaim and
recovery of grants a stopped scheduler left pending."""
import pytest

from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import listings as db_listings
from memagg.drivers.reservoir import donors
from memagg.scheduler import reservoir
from memagg.scheduler import rpcapi
from memagg.tests.unit.reservoir import cluster
from memagg.tests.unit.reservoir.cluster import VM_1, VM_2
from memagg.tests.unit.reservoir import compute_double


@pytest.fixture
def ctxt(reservoir_opts, sqlite_db, admin_context):
    return admin_context


@pytest.fixture
def compute():
    return compute_double.ComputeDouble()


def _reservoir(conf, compute, selection=None):
    return reservoir.Reservoir(conf.conf, compute_api=compute,
                               selection=selection or donors.LargestFirst())


@pytest.fixture
def gmc(conf, compute):
    return _reservoir(conf, compute)


@pytest.fixture
def three_hosts(ctxt):
    """Consumer c (VM_1 booked 4096, VM_2 booked 1024), donors a (1024 MiB
    lendable) and b (512)."""
    cluster.host(ctxt, 'c', 4096, [(VM_1, 4096), (VM_2, 1024)])
    cluster.host(ctxt, 'a', 1024)
    cluster.host(ctxt, 'b', 512)
    return ctxt


def _stored(ctxt, uuid):
    grant = db_grants.grant_get(ctxt, uuid)
    return grant, [(s.index, s.donor_host, s.status) for s in grant.slabs]


def test_a_grant_is_prepared_attached_and_active(three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)

    assert (grant['status'], grant['requested_mb'], grant['granted_mb'],
            grant['partial'], grant['reason'], grant['slab_size_mb']) == (
        'active', 512, 512, False, None, 64)
    assert len(grant['secret']) == 64 and int(grant['secret'], 16) >= 0
    # largest_first: all eight slabs on a, the consumer never a donor.
    assert [(s['index'], s['donor_host'], s['endpoint'], s['rkey'],
             s['status']) for s in grant['slabs']] == [
        (i, 'a', 'tcp://a:7450', 1000 + i, 'active') for i in range(8)]
    assert compute.called('prepare_slabs') == [
        ('a', grant['uuid'], 64, list(range(8)))]
    assert compute.attached[grant['uuid']]['secret'] == grant['secret']
    stored, slabs = _stored(three_hosts, grant['uuid'])
    assert stored.status == 'active' and stored.secret == grant['secret']
    assert slabs == [(i, 'a', 'active') for i in range(8)]
    assert stored.slabs[3].remote_addr == 0x40000000
    assert len(compute.holding('a')) == 8


def test_every_grant_has_its_own_secret(three_hosts, gmc):
    first = gmc.allocate(three_hosts, VM_1, 'c', 64)
    second = gmc.allocate(three_hosts, VM_2, 'c', 64)
    assert first['secret'] != second['secret']


def test_a_request_is_rounded_up_to_whole_slabs(three_hosts, gmc):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 100)
    assert (grant['granted_mb'], grant['partial']) == (128, False)


def test_a_request_beyond_the_cap_is_cut_and_partial(three_hosts, gmc):
    cluster.host(three_hosts, 'a', 4096)

    grant = gmc.allocate(three_hosts, VM_1, 'c', 3000)

    assert (grant['granted_mb'], grant['partial']) == (2048, True)
    assert 'cut to 2048 MiB by the cap' in grant['reason']
    assert 'max_remote_ratio 0.5 x its booked 4096 MiB' in grant['reason']


def test_the_cap_counts_what_the_vm_already_holds(three_hosts, gmc):
    gmc.allocate(three_hosts, VM_2, 'c', 512)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 64)

    assert 'max_remote_ratio 0.5' in str(error.value)
    assert 'holds 512 MiB' in str(error.value)


def test_a_cap_of_zero_grants_nothing(conf, three_hosts, gmc, compute):
    conf.config(max_remote_ratio=0.0, group='reservoir')

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_1, 'c', 64)

    assert 'max_remote_ratio' in error.value.message
    assert db_listings.list_resources(three_hosts, 'grants') == []
    assert compute.calls == []


def test_a_donor_out_of_memory_makes_a_partial_grant(three_hosts, conf,
                                                     compute):
    compute.behaviour['a'] = 3
    cluster.host(three_hosts, 'b', 0)

    grant = _reservoir(conf, compute).allocate(three_hosts, VM_1, 'c', 512)

    assert (grant['granted_mb'], grant['partial']) == (192, True)
    assert grant['reason'] == 'a prepared 3 of 8 slabs (out of memory)'
    assert [s['index'] for s in grant['slabs']] == [0, 1, 2]
    stored, slabs = _stored(three_hosts, grant['uuid'])
    assert (stored.granted_mb, stored.partial) == (192, True)
    assert slabs == [(i, 'a', 'active') for i in range(3)]
    assert len(compute.holding('a')) == 3


def test_what_a_donor_could_not_prepare_goes_to_another(three_hosts, gmc,
                                                        compute):
    compute.behaviour['a'] = 3

    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)

    assert (grant['granted_mb'], grant['partial']) == (512, False)
    assert [s['donor_host'] for s in grant['slabs']] == ['a'] * 3 + \
        ['b'] * 5
    assert compute.called('prepare_slabs')[1] == (
        'b', grant['uuid'], 64, [3, 4, 5, 6, 7])
    assert 'a prepared 3 of 8 slabs' in grant['reason']


def test_a_failing_donor_is_replaced_and_cleaned(three_hosts, gmc, compute):
    compute.behaviour['a'] = 'fail'

    grant = gmc.allocate(three_hosts, VM_1, 'c', 256)

    assert [s['donor_host'] for s in grant['slabs']] == ['b'] * 4
    assert grant['partial'] is False
    assert 'a failed to prepare 4 slabs: No reply from memagg-compute.a' \
        in grant['reason']
    # A lost reply may hide slabs a set up: it is told to free them.
    assert ('a', grant['uuid'], None) in compute.called('free_slabs')


def test_a_malformed_reply_counts_as_a_failure(three_hosts, gmc, compute):
    compute.behaviour['a'] = 'malformed'

    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)

    assert [s['donor_host'] for s in grant['slabs']] == ['b', 'b']
    assert 'malformed prepare_slabs reply' in grant['reason']


def test_when_every_donor_fails_nothing_is_stored_or_held(three_hosts, gmc,
                                                          compute):
    compute.behaviour.update(a=2, b='fail')
    # a prepares 2 of 8; b fails; nothing else: a partial grant...
    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)
    assert grant['granted_mb'] == 128
    # ...but with a out of memory and b failing, nothing at all.
    compute.behaviour.update(a=0)
    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 128)

    assert 'a prepared 0 of 2 slabs' in error.value.message
    assert 'b failed to prepare' in error.value.message
    assert [g.uuid for g in db_listings.list_resources(
        three_hosts, 'grants')] == [grant['uuid']]
    assert compute.holding() == {(grant['uuid'], 0), (grant['uuid'], 1)}


def test_slabs_past_a_hole_are_freed(three_hosts, conf, compute):
    class Holey(compute_double.ComputeDouble):
        def prepare_slabs(self, ctxt, host, grant_uuid, secret, size,
                          indexes, timeout=None):
            reply = super().prepare_slabs(ctxt, host, grant_uuid, secret,
                                          size, indexes, timeout=timeout)
            # Slab 1 refused, 0 and 2 given.
            reply['slabs'] = [s for s in reply['slabs'] if s['index'] != 1]
            self.held[host].discard((grant_uuid, 1))
            return reply
    holey = Holey()
    cluster.host(three_hosts, 'b', 0)

    grant = _reservoir(conf, holey).allocate(three_hosts, VM_1, 'c', 192)

    assert [s['index'] for s in grant['slabs']] == [0]
    assert grant['partial'] is True
    assert ('a', grant['uuid'], [2]) in holey.called('free_slabs')
    assert holey.holding() == {(grant['uuid'], 0)}


def test_an_attach_failure_frees_the_slabs_and_fails_the_grant(
        three_hosts, gmc, compute):
    compute.attach_fails.add('c')

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_1, 'c', 256)

    assert 'c could not attach it: libvirt is down' in error.value.message
    (grant,) = db_listings.list_resources(three_hosts, 'grants')
    assert (grant.status, grant.reason) == (
        'failed', 'c could not attach it: libvirt is down')
    assert {s.status for s in grant.slabs} == {'released'}
    assert compute.holding() == set()


def test_no_donor_at_all(ctxt, gmc, compute):
    cluster.host(ctxt, 'c', 4096, [(VM_1, 4096)])
    cluster.host(ctxt, 'old', 4096, age_s=3600)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(ctxt, VM_1, 'c', 64)

    assert 'no compute host other than c reported lendable memory in the ' \
        'last 60 s' in error.value.message
    assert compute.calls == []


def test_what_donors_lend_is_not_lent_twice(three_hosts, gmc):
    gmc.allocate(three_hosts, VM_1, 'c', 1536)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 64)

    assert 'no donor has room for a slab of 64 MiB (a: 0 MiB available, ' \
        'b: 0 MiB available)' in error.value.message


def test_unknown_or_gone_instances_and_bad_sizes(three_hosts, gmc):
    with pytest.raises(exceptions.NotFound):
        gmc.allocate(three_hosts, cluster.VM_3, 'c', 64)
    cluster.host(three_hosts, 'c', 4096, [(VM_1, 4096)])
    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 64)
    assert 'is gone from c' in error.value.message
    for size in (0, -5, 1.5, True, '64'):
        with pytest.raises(exceptions.InvalidParameter) as error:
            gmc.allocate(three_hosts, VM_1, 'c', size)
        assert error.value.kwargs['field'] == 'size_mb'


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
        gmc.release(three_hosts, cluster.VM_3)


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


def test_reclaim_takes_the_newest_grants_slabs_first(three_hosts, gmc,
                                                     compute):
    older = gmc.allocate(three_hosts, VM_1, 'c', 512)
    newer = gmc.allocate(three_hosts, VM_2, 'c', 256)
    assert {s['donor_host'] for s in older['slabs'] + newer['slabs']} == \
        {'a'}

    reclaimed = gmc.reclaim(three_hosts, 'a', 300)

    # 300 MiB: the newer grant's 4 slabs, then the older one's last slab.
    assert reclaimed == 320
    assert compute.called('reclaim_slabs') == [
        ('c', newer['uuid'], [0, 1, 2, 3]), ('c', older['uuid'], [7])]
    assert ('a', older['uuid'], [7]) in compute.called('free_slabs')
    old, slabs = _stored(three_hosts, older['uuid'])
    assert old.granted_mb == 448 and slabs[7] == (7, 'a', 'reclaimed')
    assert db_grants.grant_get(three_hosts, newer['uuid']).granted_mb == 0
    assert len(compute.holding('a')) == 7


def test_reclaim_skips_a_consumer_that_fails(three_hosts, gmc, compute):
    cluster.host(three_hosts, 'd', 0, [(cluster.VM_3, 2048)])
    older = gmc.allocate(three_hosts, VM_1, 'c', 128)
    gmc.allocate(three_hosts, cluster.VM_3, 'd', 128)
    compute.reclaim_fails.add('d')

    assert gmc.reclaim(three_hosts, 'a', 64) == 64
    assert compute.called('reclaim_slabs')[-1] == ('c', older['uuid'], [1])
    assert gmc.reclaim(three_hosts, 'b', 64) == 0
    with pytest.raises(exceptions.NotFound):
        gmc.reclaim(three_hosts, 'nowhere', 64)


def test_recovery_fails_pending_grants_and_frees_their_slabs(
        three_hosts, gmc, compute):
    def stop_before_attach(method, host):
        if method == 'attach_grant':
            raise KeyboardInterrupt('scheduler stopped')
    compute.hook = stop_before_attach
    with pytest.raises(KeyboardInterrupt):
        gmc.allocate(three_hosts, VM_1, 'c', 128)
    (left,) = db_listings.list_resources(three_hosts, 'grants')
    assert left.status == 'pending' and len(compute.holding('a')) == 2
    compute.hook = None

    pending = gmc.pending_grants(three_hosts)
    gmc.recover(three_hosts, pending)

    assert pending == [left.uuid]
    grant, slabs = _stored(three_hosts, left.uuid)
    assert grant.status == 'failed'
    assert 'memagg-scheduler stopped while setting it up' in grant.reason
    assert {s[2] for s in slabs} == {'released'}
    assert compute.holding() == set()


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

    first = reservoir.begin_release(three_hosts, grant['uuid'])
    second = reservoir.begin_release(three_hosts, grant['uuid'])

    assert (first[0], first[1].status) == (True, 'releasing')
    assert (second[0], second[1].status) == (False, 'releasing')


def test_a_pending_grant_cannot_be_released_yet(three_hosts, gmc):
    uuid = gmc.allocate(three_hosts, VM_1, 'c', 128)['uuid']
    db_grants.grant_compare_and_set(three_hosts, uuid, 'active', 'pending')

    with pytest.raises(exceptions.Conflict) as caught:
        reservoir.begin_release(three_hosts, uuid)

    assert 'grant %s is pending' % uuid in caught.value.message
    assert db_grants.grant_get(three_hosts, uuid).status == 'pending'


def test_a_release_is_carried_out_once(three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    reservoir.begin_release(three_hosts, grant['uuid'])

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
    reservoir.begin_release(three_hosts, grant['uuid'])

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
    reservoir.begin_release(three_hosts, grant['uuid'])

    gmc.recover(three_hosts, [])

    assert db_grants.grant_get(three_hosts, grant['uuid']).status == \
        'released'
    assert compute.holding() == set()


def test_a_slab_is_taken_by_one_reclaim_only(three_hosts, gmc, compute):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 256)

    first = reservoir.begin_reclaim(three_hosts, 'a', 1024)
    second = reservoir.begin_reclaim(three_hosts, 'a', 1024)

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
    taken, _mb = reservoir.begin_reclaim(three_hosts, 'a', 64)

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
    reservoir.begin_reclaim(three_hosts, 'a', 64)

    gmc.recover(three_hosts, [])

    assert [s.status for s in db_grants.grant_get(
        three_hosts, grant['uuid']).slabs] == ['active', 'reclaimed']
    assert compute.holding('a') == {(grant['uuid'], 0)}


def test_a_released_grant_has_no_slab_to_reclaim(three_hosts, gmc):
    grant = gmc.allocate(three_hosts, VM_1, 'c', 128)
    reservoir.begin_release(three_hosts, grant['uuid'])

    assert reservoir.begin_reclaim(three_hosts, 'a', 64) == ({}, 0)
