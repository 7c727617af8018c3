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

"""Grants following their VM's live migration (memagg.scheduler.
grant_moves), run by the plan executor on SQLite, with Nova replaced by
the executor tests' FakeNova and memagg-compute at its RPC client by
ComputeDouble; the real data path is in memagg/tests/functional."""
import threading

import oslo_messaging as messaging
import pytest

from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import grants as db_grants
from memagg.db import migrations as db_migrations
from memagg.db import tier_moves as db_tier_moves
from memagg.drivers.compute_api import none
from memagg.drivers.reservoir import donors
from memagg.scheduler import migration
from memagg.scheduler import reservoir
from memagg.tests import polling
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1, VM_2
from memagg.tests.unit.scheduler import compute_double
from memagg.tests.unit.scheduler import migration_fixtures


@pytest.fixture
def ctxt(reservoir_opts, sqlite_db, admin_context):
    reservoir_opts.config(group='consolidation', poll_interval=0.1,
                          max_retries=1, migration_timeout=30)
    # c and d consume (VM_1 on c), a lends.
    reservoir_cluster.host(admin_context, 'c', 0, [(VM_1, 1024), (VM_2, 1024)])
    reservoir_cluster.host(admin_context, 'd', 0)
    reservoir_cluster.host(admin_context, 'a', 1024)
    return admin_context


@pytest.fixture
def compute():
    return compute_double.ComputeDouble()


@pytest.fixture
def grant(reservoir_opts, ctxt, compute):
    gmc = reservoir.Reservoir(reservoir_opts.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    granted = gmc.allocate(ctxt, VM_1, 'c', 256)
    compute.stored_mb[granted['uuid']] = 768
    return granted


def _migrate(conf, ctxt, compute, nova, vm=VM_1, dest='d', promote=None):
    """Migrate ``vm`` to ``dest``; ``promote``, a Reservoir, promotes its
    slabs in the local copy only, as memagg-scheduler's does."""
    audit = migration_fixtures.make_audit(
        ctxt, [migration_fixtures.migrate(vm, 'c', dest)])
    executor = migration.Executor(conf.conf, nova, compute_rpc=compute)
    if promote is not None:
        executor.promote = promote.promote_for_migration
    executor.execute(ctxt, audit)
    return migration_fixtures.migrations_by_vm(ctxt, audit)[vm]


def test_the_grant_follows_its_vm_and_only_metadata_moves(
        reservoir_opts, ctxt, compute, grant):
    uuid = grant['uuid']
    compute.copy_left_mb[uuid] = [256, 128, 0]
    compute.stats['d'] = {'memory_bytes': 300 << 20, 'data_bytes': 301 << 20,
                          'time_ms': 1800, 'downtime_ms': 42}
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    def in_order(method, host):
        if method in ('adopt_grant', 'install_page_key'):
            assert nova.calls == []
        if method == 'wrap_page_key':
            assert compute.called('adopt_grant')
        # The copy is rebuilt once the VM runs on d (not while its memory
        # is copied), and before the source drops its copy.
        if method == 'rebuild_grant':
            assert nova.servers[VM_1]['host'] == 'd'
        if method == 'drop_export' and host == 'c':
            assert compute.called('rebuild_grant')
    compute.hook = in_order

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'succeeded'
    assert db_grants.grant_get(ctxt, uuid).consumer_host == 'd'
    assert compute.exported('d') == {uuid}
    assert compute.exported('c') == set()
    # The donor's slabs were neither freed nor moved.
    assert len(compute.holding('a')) == 4
    assert compute.called('free_slabs') == []
    assert compute.called('adopt_grant') == [('d', uuid)]
    # The page key went from c's swapd to d's, sealed for d's offer.
    assert compute.called('wrap_page_key') == [('c', uuid)]
    assert compute.called('install_page_key') == [('d', uuid)]
    assert compute.page_keys['d'][uuid] == 'key-of-' + uuid
    assert compute.called('rebuild_grant')[0] == ('d', uuid)
    # 768 MiB on donors against 1024 MiB resident at the start.
    assert (row.remote_mb, row.remote_share) == (768, 0.4286)
    assert (row.bytes_transferred, row.downtime_ms) == (301 << 20, 42)
    # The copy's rebuild is followed until it is done.
    polling.wait_for(
        lambda: db_migrations.migration_get(
            ctxt, row.uuid).local_copy_left_mb == 0,
        10, interval=0.05, message='the copy rebuilt')


def test_a_vm_without_grants_moves_as_before_with_no_remote_memory(
        reservoir_opts, ctxt, compute):
    nova = migration_fixtures.FakeNova({VM_2: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova, vm=VM_2)

    assert row.status == 'succeeded'
    assert (row.remote_mb, row.remote_share, row.local_copy_left_mb) == (
        0, 0.0, None)
    assert compute.calls == []


def test_a_destination_that_cannot_serve_the_grant_stops_the_migration(
        reservoir_opts, ctxt, compute, grant):
    compute.adopt_fails.add('d')
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'failed'
    assert 'destination d could not serve grant %s' % grant['uuid'] in (
        row.error)
    assert 'memagg-swapd of d does not answer' in row.error
    assert nova.calls == []
    assert db_grants.grant_get(ctxt, grant['uuid']).consumer_host == 'c'
    assert compute.exported('c') == {grant['uuid']}


def _reservoir(conf, compute):
    return reservoir.Reservoir(conf.conf, compute_api=compute,
                               selection=donors.LargestFirst())


def test_slabs_in_the_local_copy_only_go_to_donors_before_the_vm(
        reservoir_opts, ctxt, compute, grant):
    gmc = _reservoir(reservoir_opts, compute)
    gmc.move_slabs(ctxt, grant['uuid'], 'c', demote=[2, 3])
    compute.calls.clear()
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    def in_order(method, host):
        if method == 'adopt_grant':
            # The destination is given a table of slabs on donors only.
            assert [s.status for s in db_grants.grant_get(
                ctxt, grant['uuid']).slabs] == ['active'] * 4
            assert len(compute.called('promote_slab')) == 2
    compute.hook = in_order

    row = _migrate(reservoir_opts, ctxt, compute, nova, promote=gmc)

    assert (row.status, row.error) == ('succeeded', None)
    assert compute.called('promote_slab') == [('c', grant['uuid'], 2),
                                              ('c', grant['uuid'], 3)]
    assert len(compute.holding('a')) == 4
    moved = db_grants.grant_get(ctxt, grant['uuid'])
    assert moved.consumer_host == 'd' and moved.granted_mb == 256


def test_slabs_no_donor_takes_keep_the_vm_on_its_source(
        reservoir_opts, ctxt, compute, grant):
    gmc = _reservoir(reservoir_opts, compute)
    gmc.move_slabs(ctxt, grant['uuid'], 'c', demote=[2])
    # a now lends nothing more.
    reservoir_cluster.host(ctxt, 'a', 0)
    compute.calls.clear()
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova, promote=gmc)

    assert row.status == 'failed'
    assert ('grant %s has slabs [2] in the local copy of c only (the slow '
            'tier) that could not be promoted to a donor' % grant['uuid']
            ) in row.error
    assert nova.calls == [] and compute.called('adopt_grant') == []
    stored = db_grants.grant_get(ctxt, grant['uuid'])
    assert stored.consumer_host == 'c'
    assert stored.slabs[2].status == 'reclaimed'


def test_a_move_under_way_ends_before_the_vm_goes(
        reservoir_opts, ctxt, compute, grant):
    """A demotion that took its slab before the migration was queued (the
    DB refuses one after) is carried out first; the migration then
    promotes the slab again and goes."""
    gmc = _reservoir(reservoir_opts, compute)
    assert db_tier_moves.slabs_take_for_demotion(
        ctxt, grant['uuid'], 'c', [1]) == {'a': [1]}
    compute.calls.clear()
    nova = migration_fixtures.FakeNova({VM_1: 'c'})
    ended = []
    thread = threading.Thread(target=lambda: ended.append(_migrate(
        reservoir_opts, ctxt, compute, nova, promote=gmc)), daemon=True)
    thread.start()
    polling.wait_for(
        lambda: db_migrations.migration_running_for(ctxt, VM_1) is not None
        and compute.called('grant_status') == [], 10, interval=0.05,
        message='the migration waiting for the demotion')
    assert db_grants.grant_get(ctxt, grant['uuid']).slabs[1].status == (
        'reclaiming')

    gmc.finish_reclaim(ctxt, 'a', {grant['uuid']: [1]})
    thread.join(30)

    assert (ended[0].status, ended[0].error) == ('succeeded', None)
    assert [c[0] for c in compute.calls[:4]] == [
        'reclaim_slabs', 'free_slabs', 'prepare_slabs', 'promote_slab']
    assert [s.status for s in db_grants.grant_get(
        ctxt, grant['uuid']).slabs] == ['active'] * 4


def test_a_move_that_does_not_end_keeps_the_vm_on_its_source(
        reservoir_opts, ctxt, compute, grant):
    reservoir_opts.config(group='consolidation', migration_timeout=1)
    db_tier_moves.slabs_take_for_demotion(ctxt, grant['uuid'], 'c', [1])
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova,
                   promote=_reservoir(reservoir_opts, compute))

    assert row.status == 'failed'
    assert ("slabs {'%s': [1]} of the VM's grants were still moving between "
            "the tiers after 1 s" % grant['uuid']) in row.error
    assert nova.calls == [] and compute.called('adopt_grant') == []


def test_an_unsealed_grant_moves_without_a_page_key(
        reservoir_opts, ctxt, compute, grant):
    compute.unsealed.add(grant['uuid'])
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'succeeded'
    assert compute.called('wrap_page_key') == []
    assert compute.called('install_page_key') == []


def test_a_source_that_cannot_say_whether_it_seals_stops_the_migration(
        reservoir_opts, ctxt, compute, grant):
    def status_fails(method, host):
        if method == 'grant_status':
            raise exceptions.ServiceUnavailable(reason='swapd of c is gone')
    compute.hook = status_fails
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'failed'
    assert 'did not say whether grant %s is sealed' % grant['uuid'] in (
        row.error)
    assert nova.calls == []
    assert compute.called('adopt_grant') == []
    assert compute.exported('c') == {grant['uuid']}


def test_a_failed_migration_leaves_the_grant_on_its_source(
        reservoir_opts, ctxt, compute, grant):
    nova = migration_fixtures.FakeNova(
        {VM_1: 'c'}, behaviours={VM_1: ['fail', 'fail']})

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'failed'
    assert nova.servers[VM_1]['host'] == 'c'
    assert db_grants.grant_get(ctxt, grant['uuid']).consumer_host == 'c'
    assert compute.exported('c') == {grant['uuid']}
    assert compute.exported('d') == set()
    assert ('drop_export', 'd', grant['uuid']) in compute.calls
    assert compute.called('rebuild_grant') == []


def test_no_host_releases_a_grant_while_its_vm_migrates(
        reservoir_opts, ctxt, compute, grant):
    gmc = reservoir.Reservoir(reservoir_opts.conf, compute_api=compute)
    audit = migration_fixtures.make_audit(
        ctxt, [migration_fixtures.migrate(VM_1, 'c', 'd')])
    migration_fixtures.migrations_by_vm(ctxt, audit)
    db_migrations.migration_queue(
        ctxt, db_audits.audit_get(ctxt, audit).actions[0].id)

    with pytest.raises(exceptions.Conflict) as caught:
        gmc.release(ctxt, grant['uuid'], consumer_host='d')

    assert 'can be released once it ends' in caught.value.message
    assert db_grants.grant_get(ctxt, grant['uuid']).status == 'active'


def test_the_old_consumer_of_a_moved_grant_releases_nothing(
        reservoir_opts, ctxt, compute, grant):
    gmc = reservoir.Reservoir(reservoir_opts.conf, compute_api=compute)
    db_grants.grant_move(ctxt, grant['uuid'], 'c', 'd')

    answer = gmc.release(ctxt, grant['uuid'], consumer_host='c')

    assert (answer['status'], answer['consumer_host']) == ('active', 'd')
    assert compute.called('free_slabs') == []
    assert len(compute.holding('a')) == 4
    # Its consumer releases it.
    assert gmc.release(ctxt, grant['uuid'],
                       consumer_host='d')['status'] == 'released'
    assert compute.holding('a') == set()


def test_a_grant_moves_only_between_its_migration_s_hosts(ctxt, grant):
    with pytest.raises(exceptions.Conflict) as caught:
        db_grants.grant_move(ctxt, grant['uuid'], 'a', 'd')
    assert 'consumed by c, neither a nor d' in caught.value.message
    # Moving again is a no-op.
    db_grants.grant_move(ctxt, grant['uuid'], 'c', 'd')
    assert db_grants.grant_move(ctxt, grant['uuid'], 'c',
                                'd').consumer_host == 'd'


def test_without_a_driver_that_migrates_no_host_is_asked_anything(
        reservoir_opts, ctxt, compute, grant):
    calls_before = list(compute.calls)

    row = _migrate(reservoir_opts, ctxt, compute,
                   none.NoComputeApi(reservoir_opts.conf))

    assert row.status == 'failed'
    assert 'the none compute API driver cannot live-migrate VM %s' % (
        VM_1) in row.error
    assert compute.calls == calls_before
    assert db_grants.grant_get(ctxt, grant['uuid']).consumer_host == 'c'


def test_a_destination_that_stops_serving_mid_migration_aborts_it(
        reservoir_opts, ctxt, compute, grant):
    uuid = grant['uuid']
    # The migration stays in flight (the gate) until the destination's
    # export is gone, as when its memagg-swapd dies.
    nova = migration_fixtures.FakeNova({VM_1: 'c'},
                                       behaviours={VM_1: ['hang']})

    def swapd_of_d_dies(method, host):
        if method == 'grant_status' and host == 'd' and nova.moving:
            compute.exports['d'].discard(uuid)
    compute.hook = swapd_of_d_dies

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.status == 'failed'
    assert ('abort', VM_1) in nova.calls
    assert 'destination d no longer serves grant %s' % uuid in row.error
    assert nova.servers[VM_1]['host'] == 'c'
    assert db_grants.grant_get(ctxt, uuid).consumer_host == 'c'
    assert compute.exported('c') == {uuid}
    assert len(compute.holding('a')) == 4


def test_a_remote_error_is_one_line_of_the_reason(reservoir_opts, ctxt,
                                                  compute, grant):
    def refused(*args, **kwargs):
        raise messaging.RemoteError(
            'ServiceUnavailable', 'memagg-swapd of d does not answer',
            ['Traceback (most recent call last):\n', '  File "x"\n'])
    compute.adopt_grant = refused
    nova = migration_fixtures.FakeNova({VM_1: 'c'})

    row = _migrate(reservoir_opts, ctxt, compute, nova)

    assert row.error.endswith(
        'could not serve grant %s from its donors: ServiceUnavailable: '
        'memagg-swapd of d does not answer' % grant['uuid']), row.error
    assert 'Traceback' not in row.error
