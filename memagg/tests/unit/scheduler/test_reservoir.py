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
recovery of grants a stopped scheduler left pending (releases and
reclaims: test_grant_returns.py)."""
import pytest

from memagg.common import exceptions
from memagg.db import listings as db_listings
from memagg.scheduler import rpcapi
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1, VM_2
from memagg.tests.unit.scheduler import compute_double
from memagg.tests.unit.scheduler import reservoir_fixtures


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
    stored, slabs = reservoir_cluster.stored(three_hosts, grant['uuid'])
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
    reservoir_cluster.host(three_hosts, 'a', 4096)

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


def _vms_of_c():
    return [(VM_1, 4096), (VM_2, 1024)]


def test_a_grant_is_cut_to_the_room_of_its_hosts_local_copies(
        three_hosts, gmc):
    reservoir_cluster.host(three_hosts, 'c', 4096, _vms_of_c(),
                           local_room_mb=200)

    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)

    assert (grant['granted_mb'], grant['partial']) == (192, True)
    assert ('cut to 192 MiB: c has room for 200 MiB more of local copies'
            in grant['reason'])


def test_grants_made_since_the_report_count_against_the_room(
        three_hosts, gmc):
    reservoir_cluster.host(three_hosts, 'c', 4096, _vms_of_c(),
                           local_room_mb=256)
    assert gmc.allocate(three_hosts, VM_1, 'c', 128)['granted_mb'] == 128

    grant = gmc.allocate(three_hosts, VM_2, 'c', 256)

    assert (grant['granted_mb'], grant['partial']) == (128, True)
    assert 'c has room for 128 MiB more' in grant['reason']
    # The next report counts those copies itself: the room is its own.
    reservoir_cluster.host(three_hosts, 'c', 4096, _vms_of_c(),
                           local_room_mb=64)
    assert gmc.allocate(three_hosts, VM_2, 'c', 64)['granted_mb'] == 64


def test_a_host_whose_local_copies_have_no_room_gets_no_grant(
        three_hosts, gmc, compute):
    reservoir_cluster.host(three_hosts, 'c', 4096, _vms_of_c(),
                           local_room_mb=32)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_1, 'c', 64)

    assert ('c has room for 32 MiB more of local copies (its local tier; '
            '[swapd] local_copy_reserve_mb kept free): not a slab (64 MiB) '
            'more') in error.value.message
    assert db_listings.list_resources(three_hosts, 'grants') == []
    assert compute.calls == []


def test_a_cap_of_zero_grants_nothing(conf, three_hosts, gmc, compute):
    conf.config(max_remote_ratio=0.0, group='reservoir')

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_1, 'c', 64)

    assert 'max_remote_ratio' in error.value.message
    assert db_listings.list_resources(three_hosts, 'grants') == []
    assert compute.calls == []


def test_a_donor_out_of_memory_makes_a_partial_grant(three_hosts, conf,
                                                     compute):
    conf.config(local_tier=False, group='reservoir')
    compute.behaviour['a'] = 3
    reservoir_cluster.host(three_hosts, 'b', 0)

    grant = reservoir_fixtures.make_reservoir(conf, compute).allocate(
        three_hosts, VM_1, 'c', 512)

    assert (grant['granted_mb'], grant['partial']) == (192, True)
    assert grant['reason'] == 'a prepared 3 of 8 slabs (out of memory)'
    assert [s['index'] for s in grant['slabs']] == [0, 1, 2]
    stored, slabs = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert (stored.granted_mb, stored.partial) == (192, True)
    assert slabs == [(i, 'a', 'active') for i in range(3)]
    assert len(compute.holding('a')) == 3


def test_what_no_donor_could_prepare_goes_to_the_local_tier(
        three_hosts, gmc, compute):
    compute.behaviour['a'] = 3
    reservoir_cluster.host(three_hosts, 'b', 0)

    grant = gmc.allocate(three_hosts, VM_1, 'c', 512)

    # granted_mb is what donors lend; not partial: all 8 slabs are there.
    assert (grant['granted_mb'], grant['partial']) == (192, False)
    assert grant['reason'] == ('a prepared 3 of 8 slabs (out of memory); 5 '
                               'slabs in the local tier (L2)')
    stored, slabs = reservoir_cluster.stored(three_hosts, grant['uuid'])
    assert slabs == [(i, 'a', 'active') for i in range(3)] + [
        (i, 'c', 'reclaimed') for i in range(3, 8)]
    # The consumer attaches all eight: the local ones from its copy.
    assert [(s['index'], s['status']) for s in compute.attached[
        grant['uuid']]['slabs']] == [(i, 'pending') for i in range(3)] + [
        (i, 'reclaimed') for i in range(3, 8)]
    assert len(compute.holding('a')) == 3
    # Nothing asked the consumer to prepare or free slabs as a donor.
    assert not [c for c in compute.calls if c[1] == 'c'
                and c[0] in ('prepare_slabs', 'free_slabs')]


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
                                                          conf, compute):
    conf.config(local_tier=False, group='reservoir')
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
    reservoir_cluster.host(three_hosts, 'b', 0)
    conf.config(local_tier=False, group='reservoir')

    grant = reservoir_fixtures.make_reservoir(conf, holey).allocate(
        three_hosts, VM_1, 'c', 192)

    assert [s['index'] for s in grant['slabs']] == [0]
    assert grant['partial'] is True
    assert ('a', grant['uuid'], [2]) in holey.called('free_slabs')
    assert holey.holding() == {(grant['uuid'], 0)}

    # With the local tier, the refused slab is there: no hole.
    conf.config(local_tier=True, group='reservoir')
    grant = reservoir_fixtures.make_reservoir(conf, holey).allocate(
        three_hosts, VM_1, 'c', 192)

    assert [(s['index'], s['donor_host'], s['status'])
            for s in grant['slabs']] == [
        (0, 'a', 'active'), (1, 'c', 'reclaimed'), (2, 'a', 'active')]
    assert grant['partial'] is False
    assert ('a', grant['uuid'], [2]) not in holey.called('free_slabs')


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


def test_no_donor_at_all(ctxt, gmc, conf, compute):
    conf.config(local_tier=False, group='reservoir')
    reservoir_cluster.host(ctxt, 'c', 4096, [(VM_1, 4096)])
    reservoir_cluster.host(ctxt, 'old', 4096, age_s=3600)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(ctxt, VM_1, 'c', 64)

    assert 'no compute host other than c reported lendable memory in the ' \
        'last 60 s' in error.value.message
    assert compute.calls == []


def test_no_donor_at_all_grants_the_local_tier(ctxt, gmc, compute):
    reservoir_cluster.host(ctxt, 'c', 4096, [(VM_1, 4096)])

    grant = gmc.allocate(ctxt, VM_1, 'c', 128)

    assert (grant['granted_mb'], grant['partial']) == (0, False)
    assert grant['reason'] == (
        'no compute host other than c reported lendable memory in the last '
        '60 s ([DEFAULT] service_down_time): 2 in the local tier (L2)')
    assert [(s['index'], s['donor_host'], s['status'])
            for s in grant['slabs']] == [(0, 'c', 'reclaimed'),
                                         (1, 'c', 'reclaimed')]
    assert [c[0] for c in compute.calls] == ['attach_grant']
    # What the local tier holds counts against the VM's cap.
    grant = gmc.allocate(ctxt, VM_1, 'c', 4096)
    assert (len(grant['slabs']), grant['partial']) == (30, True)
    assert 'holds 128 MiB' in grant['reason']


def test_what_donors_lend_is_not_lent_twice(three_hosts, gmc, conf,
                                            compute):
    conf.config(local_tier=False, group='reservoir')
    first = gmc.allocate(three_hosts, VM_1, 'c', 1536)

    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 64)

    assert 'no donor has room for a slab of 64 MiB (a: 0 MiB available, ' \
        'b: 0 MiB available)' in error.value.message

    # With the local tier, the next grant is all L2: no donor lends more.
    conf.config(local_tier=True, group='reservoir')
    grant = gmc.allocate(three_hosts, VM_2, 'c', 128)
    assert {s['status'] for s in grant['slabs']} == {'reclaimed'}
    assert compute.holding() == {(first['uuid'], i) for i in range(24)}


def test_unknown_or_gone_instances_and_bad_sizes(three_hosts, gmc):
    with pytest.raises(exceptions.NotFound):
        gmc.allocate(three_hosts, reservoir_cluster.VM_3, 'c', 64)
    reservoir_cluster.host(three_hosts, 'c', 4096, [(VM_1, 4096)])
    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as error:
        gmc.allocate(three_hosts, VM_2, 'c', 64)
    assert 'is gone from c' in error.value.message
    for size in (0, -5, 1.5, True, '64'):
        with pytest.raises(exceptions.InvalidParameter) as error:
            gmc.allocate(three_hosts, VM_1, 'c', size)
        assert error.value.kwargs['field'] == 'size_mb'


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
    grant, slabs = reservoir_cluster.stored(three_hosts, left.uuid)
    assert grant.status == 'failed'
    assert 'memagg-scheduler stopped while setting it up' in grant.reason
    assert {s[2] for s in slabs} == {'released'}
    assert compute.holding() == set()
