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

"""The Scheduler RPC API 1.2 over oslo.messaging's fake driver: the
manager's allocate_remote, release_grant and reclaim endpoints, their
errors arriving typed at the caller, and the clean-up at start of grants
a previous run left pending (memagg-compute stood in for at its RPC
client)."""
import pytest

from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.drivers.reservoir import donors
from memagg.scheduler import manager
from memagg.scheduler import reservoir
from memagg.scheduler import rpcapi
from memagg import service
from memagg.tests import polling
from memagg.tests.unit.scheduler import reservoir_cluster
from memagg.tests.unit.scheduler.reservoir_cluster import VM_1, VM_3
from memagg.tests.unit.scheduler import compute_double


class _Executor:
    def resume(self, ctxt, execute=True):
        pass


@pytest.fixture
def compute():
    return compute_double.ComputeDouble()


def _service(conf, compute):
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    svc = service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                          manager.SchedulerManager(
                              host='ctl', executor=_Executor(),
                              reservoir=gmc))
    svc.start()
    assert svc.connected.wait(10)
    return svc


@pytest.fixture
def scheduler(conf, reservoir_opts, fake_rpc, sqlite_db, admin_context,
              compute):
    reservoir_cluster.host(admin_context, 'c', 0, [(VM_1, 4096)])
    reservoir_cluster.host(admin_context, 'a', 1024)
    svc = _service(conf, compute)
    yield rpcapi.SchedulerAPI()
    svc.stop()


def test_allocate_release_and_reclaim_over_rpc(scheduler, admin_context,
                                               compute):
    grant = scheduler.allocate_remote(admin_context, VM_1, 'c', 256,
                                      timeout=10)

    assert (grant['status'], grant['granted_mb'], grant['consumer_host']) \
        == ('active', 256, 'c')
    assert len(grant['secret']) == 64
    assert scheduler.reclaim(admin_context, 'a', 64, timeout=10) == 64
    released = scheduler.release_grant(admin_context, grant['uuid'],
                                       timeout=10)
    assert released['status'] == 'released'
    assert compute.holding() == set()


def test_move_slabs_is_carried_out_on_the_grants_worker(
        scheduler, admin_context, compute):
    grant = scheduler.allocate_remote(admin_context, VM_1, 'c', 256,
                                      timeout=10)

    scheduler.move_slabs(admin_context, grant['uuid'], 'c', [3], [])

    def status():
        return [s.status for s in db_grants.grant_get(
            admin_context, grant['uuid']).slabs][3]
    polling.wait_for(lambda: status() == 'reclaimed', 10,
                     message='slab 3 demoted')
    scheduler.move_slabs(admin_context, grant['uuid'], 'c', [], [3])
    # Active only once the consumer copied it (promoting before).
    polling.wait_for(lambda: status() == 'active', 10,
                     message='slab 3 promoted')
    assert compute.called('promote_slab') == [('c', grant['uuid'], 3)]


def test_errors_arrive_typed(scheduler, admin_context, conf):
    with pytest.raises(exceptions.NotFound) as missing:
        scheduler.allocate_remote(admin_context, VM_3, 'c', 64,
                                  timeout=10)
    assert 'Instance %s could not be found' % VM_3 in \
        missing.value.message
    conf.config(max_remote_ratio=0.0, group='reservoir')
    with pytest.raises(rpcapi.RemoteMemoryUnavailable) as refused:
        scheduler.allocate_remote(admin_context, VM_1, 'c', 64, timeout=10)
    assert refused.value.code == 409
    assert 'max_remote_ratio' in refused.value.message
    with pytest.raises(exceptions.InvalidParameter):
        scheduler.reclaim(admin_context, 'a', 0, timeout=10)
    with pytest.raises(exceptions.NotFound):
        scheduler.release_grant(admin_context, VM_3, timeout=10)


def test_a_restarted_scheduler_cleans_up_pending_grants(
        conf, reservoir_opts, fake_rpc, sqlite_db, admin_context, compute):
    reservoir_cluster.host(admin_context, 'c', 0, [(VM_1, 4096)])
    reservoir_cluster.host(admin_context, 'a', 1024)
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())

    def crash(method, host):
        if method == 'attach_grant':
            raise SystemExit('memagg-scheduler killed')
    compute.hook = crash
    with pytest.raises(SystemExit):
        gmc.allocate(admin_context, VM_1, 'c', 128)
    compute.hook = None
    assert len(compute.holding('a')) == 2

    svc = _service(conf, compute)
    try:
        (grant,) = polling.wait_for(
            lambda: db_grants.grants_in_status(admin_context, ('failed',)), 10,
            message='the pending grant failed')
    finally:
        svc.stop()
    assert compute.holding() == set()
    assert 'stopped while setting it up' in grant.reason


def test_an_unknown_plugin_fails_the_start(conf, reservoir_opts,
                                           reservoir_plugins, sqlite_db):
    conf.config(donor_selection='first_fit', group='reservoir')
    with pytest.raises(exceptions.InvalidParameter) as error:
        manager.SchedulerManager(host='ctl', executor=_Executor())
    assert error.value.kwargs['field'] == '[reservoir] donor_selection'
    conf.config(donor_selection='power_of_two',
                donor_selection_params='{"chunk_slabs": ', group='reservoir')
    with pytest.raises(exceptions.InvalidParameter) as error:
        manager.SchedulerManager(host='ctl', executor=_Executor())
    assert error.value.kwargs['field'] == \
        '[reservoir] donor_selection_params'
    assert 'not valid JSON' in error.value.message
