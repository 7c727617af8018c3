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

"""The Placement job against a real Placement (the openstack-placement
package under uWSGI, placement_server.py): memagg's DB (SQLite) is seeded
with compute reports as memagg-compute sends them, the job runs, and the
MEMORY_MB inventories are read back from Placement.

Conflicts are real too: another writer changes the resource provider
between the job's read and its write (the job's openstacksdk call is
wrapped to do that first), and Placement answers the job's write 409.
"""
import datetime
import subprocess
import uuid

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from openstack import connection as sdk_connection
from openstack import exceptions as sdk_exc
from oslo_utils import timeutils
import pytest
import sqlalchemy as sa

from memagg.db import facade as db_facade
from memagg.db import placement as db_placement
from memagg.db import reports as db_reports
from memagg.scheduler import placement
from memagg.tests.functional import placement_server as server_mod
from memagg.tests.functional import service_procs

pytestmark = pytest.mark.functional


def _connection(server):
    auth = ks_loading.get_plugin_loader('admin_token').load_from_options(
        endpoint=server.url, token=server_mod.TOKEN)
    return sdk_connection.Connection(
        session=ks_session.Session(auth=auth), app_name='memagg-tests',
        placement_endpoint_override=server.url)


@pytest.fixture
def server(placement_server, sqlite_db):
    """The session's Placement, with memagg on a fresh SQLite DB."""
    return placement_server


@pytest.fixture
def job(conf, server):
    """The job, on a Connection to the test Placement."""
    conf.config(enabled=True, group='placement')
    return placement.InventoryJob(conf.conf, connection=_connection(server))


def _name():
    # Placement outlives each test: every test has hosts of its own.
    return 'node-%s' % uuid.uuid4().hex[:10]


def _report(context, host, vms):
    """Store memagg-compute's report of ``host`` running ``vms``, a list of
    (booked MiB, WSS max-average MiB)."""
    db_reports.report_ingest(
        context, dict(name=host, memory_mb=65536, reserved_mb=0, vcpus=16),
        [dict(uuid=str(uuid.uuid4()), booked_mb=booked, current_mb=booked,
              wss_mb=wss, wss_maxavg_mb=wss)
         for booked, wss in vms], [],
        reported_at=timeutils.utcnow())


def _silent_since(host, when):
    """Make ``host``'s last report date from ``when``: it has been silent
    since (a report dated then would not move its state back)."""
    with db_facade.get_engine().begin() as connection:
        connection.execute(sa.text(
            'UPDATE hosts SET reported_at = :t WHERE name = :name'),
            dict(t=when, name=host))


def _rows(context):
    return {row.host: (row.original_allocation_ratio,
                       row.applied_allocation_ratio)
            for row in db_placement.placement_inventories(context)}


def test_ratio_follows_the_working_sets(server, job, admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192, reserved=512,
                                max_unit=4096)
    # Booked 8192 MiB, 4096 resident: (1 - 0.1) x 8192 / 4096.
    _report(admin_context, host, [(4096, 2048), (4096, 2048)])

    assert job.run(admin_context)[host] == 'set 1.8'

    memory = server.memory(rp)
    assert memory['allocation_ratio'] == pytest.approx(1.8)
    # Nothing else of the inventory changed.
    assert (memory['total'], memory['reserved'], memory['min_unit'],
            memory['max_unit'], memory['step_size']) == (
        8192, 512, 1, 4096, 1)
    assert _rows(admin_context) == {host: (1.0, pytest.approx(1.8))}


def test_no_write_under_the_step(server, job, admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192, allocation_ratio=1.8)
    # 0.9 x 8192 / 4000 = 1.84: 0.04 from 1.8, under the 0.05 step.
    _report(admin_context, host, [(8192, 4000)])
    generation = server.generation(rp)

    assert job.run(admin_context)[host] == 'kept 1.8'

    assert server.generation(rp) == generation
    assert _rows(admin_context) == {}

    # 0.9 x 8192 / 3800 = 1.94: over the step.
    _report(admin_context, host, [(8192, 3800)])
    assert job.run(admin_context)[host] == 'set 1.94'
    assert server.memory(rp)['allocation_ratio'] == pytest.approx(1.94)


def test_never_below_what_the_allocations_need(server, job, admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192, allocation_ratio=3.0,
                                max_unit=16384)
    server.allocate(rp, 12000)
    server.allocate(rp, 8000)
    # The VMs use all they booked: 0.9, raised to min_allocation_ratio 1.0,
    # but 20000 MiB are allocated: 20000 / 8192 = 2.4414 -> 2.45.
    _report(admin_context, host, [(8192, 8192)])

    assert job.run(admin_context)[host] == 'set 2.45'

    memory = server.memory(rp)
    assert memory['allocation_ratio'] == pytest.approx(2.45)
    assert int(8192 * memory['allocation_ratio']) >= server.used(rp) == 20000
    # Placement still takes what the capacity left holds, and no more.
    server.allocate(rp, 70)
    with pytest.raises(AssertionError, match=': 409 '):
        server.allocate(rp, 1)


def test_bounds(server, conf, job, admin_context):
    conf.config(min_allocation_ratio=1.2, max_allocation_ratio=2.5,
                group='placement')
    job = placement.InventoryJob(conf.conf, connection=job.connection)
    idle, busy = _name(), _name()
    idle_rp = server.create_provider(idle, total=8192, allocation_ratio=1.5)
    busy_rp = server.create_provider(busy, total=8192, allocation_ratio=1.5)
    # 0.9 x 8192 / 512 = 14.4 and 0.9 x 4096 / 4096 = 0.9.
    _report(admin_context, idle, [(8192, 512)])
    _report(admin_context, busy, [(4096, 4096)])

    done = job.run(admin_context)

    assert (done[idle], done[busy]) == ('set 2.5', 'set 1.2')
    assert server.memory(idle_rp)['allocation_ratio'] == pytest.approx(2.5)
    assert server.memory(busy_rp)['allocation_ratio'] == pytest.approx(1.2)


def test_operator_ratio_is_restored_when_a_host_stops_reporting(
        server, conf, job, admin_context):
    gone, staying = _name(), _name()
    gone_rp = server.create_provider(gone, total=8192, allocation_ratio=1.25)
    staying_rp = server.create_provider(staying, total=8192)
    _report(admin_context, gone, [(8192, 2048)])
    _report(admin_context, staying, [(8192, 2048)])
    assert job.run(admin_context) == {gone: 'set 3.6', staying: 'set 3.6'}

    silent_since = timeutils.utcnow() - datetime.timedelta(
        seconds=conf.conf.service_down_time + 1)
    _silent_since(gone, silent_since)
    # Just after a start every host looks silent: nothing is restored.
    assert gone not in job.run(admin_context)
    assert server.memory(gone_rp)['allocation_ratio'] == pytest.approx(3.6)

    job.started_at = silent_since
    assert job.run(admin_context) == {gone: 'restored 1.25',
                                      staying: 'kept 3.6'}

    assert server.memory(gone_rp)['allocation_ratio'] == 1.25
    assert server.memory(staying_rp)['allocation_ratio'] == (
        pytest.approx(3.6))
    assert set(_rows(admin_context)) == {staying}
    # Restored once: the next run leaves the silent host alone.
    generation = server.generation(gone_rp)
    assert gone not in job.run(admin_context)
    assert server.generation(gone_rp) == generation


def test_host_without_vms_gets_the_operator_ratio(server, job,
                                                  admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192, allocation_ratio=1.5)
    _report(admin_context, host, [])
    assert job.run(admin_context)[host] == 'kept 1.5'

    _report(admin_context, host, [(4096, 1024)])
    assert job.run(admin_context)[host] == 'set 3.6'
    # Its VMs are gone: the operator's ratio is back, and memagg forgets it.
    _report(admin_context, host, [])
    assert job.run(admin_context)[host] == 'set 1.5'

    assert server.memory(rp)['allocation_ratio'] == 1.5
    assert _rows(admin_context) == {}


def test_runs_are_idempotent_across_a_restart(server, conf, job,
                                              admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192)
    _report(admin_context, host, [(8192, 4096)])
    assert job.run(admin_context)[host] == 'set 1.8'
    generation = server.generation(rp)

    # A new scheduler: state comes from the DB and Placement alone.
    restarted = placement.InventoryJob(conf.conf,
                                       connection=_connection(server))
    assert restarted.run(admin_context)[host] == 'kept 1.8'
    assert server.generation(rp) == generation
    assert _rows(admin_context) == {host: (1.0, pytest.approx(1.8))}


def _writes_after(job, before_write):
    """Wrap the job's inventory writes: ``before_write(n)`` runs before
    the n-th (from 1). Returns the list of what each write raised (None
    when it did not)."""
    proxy = job.connection.placement
    write = proxy.update_resource_provider_inventory
    outcomes = []

    def wrapped(*args, **kwargs):
        before_write(len(outcomes) + 1)
        try:
            result = write(*args, **kwargs)
        except Exception as exc:
            outcomes.append(exc)
            raise
        outcomes.append(None)
        return result

    proxy.update_resource_provider_inventory = wrapped
    return outcomes


def test_conflict_is_retried_from_a_fresh_read(server, job, admin_context):
    host = _name()
    rp = server.create_provider(host, total=8192, allocation_ratio=3.0,
                                max_unit=16384)
    _report(admin_context, host, [(8192, 4096)])

    def allocate_first(n):
        # Nova places a VM between the job's read and its write: the
        # generation moves and the allocations now need 2.45.
        if n == 1:
            server.allocate(rp, 10000)
            server.allocate(rp, 10000)

    outcomes = _writes_after(job, allocate_first)

    assert job.run(admin_context)[host] == 'set 2.45'

    assert [type(o) for o in outcomes] == [sdk_exc.ConflictException,
                                           type(None)]
    assert outcomes[0].status_code == 409
    assert server.memory(rp)['allocation_ratio'] == pytest.approx(2.45)


def test_conflicts_without_end_give_up_and_the_run_goes_on(
        server, job, admin_context):
    contested, quiet = sorted([_name(), _name()])
    contested_rp = server.create_provider(contested, total=8192)
    quiet_rp = server.create_provider(quiet, total=8192)
    _report(admin_context, contested, [(8192, 4096)])
    _report(admin_context, quiet, [(8192, 4096)])
    attempts = placement.CONFLICT_RETRIES + 1

    def nova_compute_updates(n):
        # nova-compute rewrites the contested inventory before each write.
        if n <= attempts:
            server.set_memory(contested_rp, reserved=0)

    outcomes = _writes_after(job, nova_compute_updates)

    done = job.run(admin_context)

    assert done[contested].startswith('failed: it changed under each of 5 '
                                      'writes (409)')
    assert done[quiet] == 'set 1.8'
    assert len(outcomes) == attempts + 1
    assert all(isinstance(o, sdk_exc.ConflictException)
               for o in outcomes[:attempts])
    assert server.memory(contested_rp)['allocation_ratio'] == 1.0
    assert server.memory(quiet_rp)['allocation_ratio'] == pytest.approx(1.8)
    # The operator's ratio was recorded before the first write, and is
    # still the original: the next run sets the host.
    assert _rows(admin_context)[contested] == (1.0, None)
    assert job.run(admin_context)[contested] == 'set 1.8'


def test_host_unknown_to_placement_is_skipped(server, job, admin_context):
    unknown, known = _name(), _name()
    rp = server.create_provider(known, total=8192)
    _report(admin_context, unknown, [(8192, 4096)])
    _report(admin_context, known, [(8192, 4096)])

    done = job.run(admin_context)

    assert done[unknown] == ('skipped: Placement has no resource provider '
                             'named %s' % unknown)
    assert done[known] == 'set 1.8'
    assert server.memory(rp)['allocation_ratio'] == pytest.approx(1.8)


def test_job_built_from_the_placement_options(server, conf, admin_context):
    """The default path: the Connection comes from [placement]'s
    keystoneauth options (the admin_token plug-in, as noauth2 wants)."""
    conf.register_opts(ks_loading.get_auth_plugin_conf_options('admin_token'),
                       group='placement')
    conf.config(enabled=True, auth_type='admin_token', endpoint=server.url,
                token=server_mod.TOKEN, endpoint_override=server.url,
                group='placement')
    host = _name()
    rp = server.create_provider(host, total=8192)
    _report(admin_context, host, [(8192, 4096)])

    job = placement.load(conf.conf)

    assert job.run(admin_context)[host] == 'set 1.8'
    assert server.memory(rp)['allocation_ratio'] == pytest.approx(1.8)


def _scheduler(tmp_path, options):
    config = service_procs.write_config(tmp_path / 'memagg.conf', {
        'DEFAULT': {'transport_url': 'fake://'},
        'database': {'connection': 'sqlite:///%s' % (tmp_path / 'db')},
        'placement': dict({'enabled': 'true'}, **options),
    })
    result = subprocess.run(
        ['%s/memagg-scheduler' % service_procs.BIN_DIR,
         '--config-file', str(config)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return result.returncode, result.stderr.strip().splitlines()[-1]


_PASSWORD = {'auth_type': 'password', 'auth_url': 'http://keystone/v3',
             'username': 'memagg', 'password': 'secret',
             'project_name': 'service', 'user_domain_name': 'Default',
             'project_domain_name': 'Default'}


@pytest.mark.parametrize('options, field, reason', [
    ({}, '[placement] auth_type',
     'not set, but [placement] enabled = true needs Placement credentials'),
    ({'auth_type': 'password'}, '[placement] auth_url',
     'required by auth_type password; set it'),
    ({'auth_type': 'pasword'}, '[placement] auth_type',
     'use a keystoneauth1 plug-in name such as password'),
    (dict(_PASSWORD, min_allocation_ratio='3', max_allocation_ratio='2'),
     '[placement] max_allocation_ratio',
     '2.0 is below min_allocation_ratio 3.0; set it to at least that'),
    (dict(_PASSWORD, margin='1.5'), '[placement] margin',
     'Should be less than or equal to 0.9'),
    (dict(_PASSWORD, interval='5'), '[placement] interval',
     'Should be greater than or equal to 10'),
])
def test_bad_options_stop_the_scheduler_at_start(tmp_path, options, field,
                                                 reason):
    code, line = _scheduler(tmp_path, options)

    assert code != 0
    assert line.startswith("memagg-scheduler: error: Invalid value for "
                           "'%s': " % field)
    assert reason in line
