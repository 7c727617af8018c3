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

"""Real live migrations of a TCG test guest between two hypervisor hosts of
this machine (memagg.tests.functional.hypervisor_hosts), asked
by memagg's nova compute API driver (openstacksdk, the real Keystone) of
the Nova double, which moves the guest as Nova's libvirt driver does
(memagg.tests.functional.nova_libvirt).

The guest's domain is persistent, as Nova's are, and backed by anonymous
memory: Nova's destination XML (migration.get_updated_guest_xml) drops a
``<memoryBacking>`` source, and libvirt refuses a destination whose
backing differs from the source's memfd.

QEMU 7.2's TCG (Debian 12) now and then misses guest writes made while a
migration copies memory: with the guest's reader re-reading its data in a
loop, 3 of 16 completed migrations on a loaded machine left the guest's
kernel crashing on the destination; none did of 30 with the guest
idle, nor of 12 with it paused. So the running guest moves idle, and data
whose checksum must survive a completed migration moves with the guest
paused (Nova live-migrates a paused server the same way). An aborted or
refused migration leaves the source's memory alone: there the guest keeps
reading its data.
"""
import contextlib
import os
import subprocess

import libvirt
import pytest

from memagg.drivers.compute_api import base
from memagg.tests.functional import hypervisor_hosts
from memagg.tests.functional.hypervisor_hosts import hypervisors_fixture  # noqa: F401,E501
from memagg.tests.functional import migration_hosts
from memagg.tests.functional import nova_catalog
from memagg.tests.functional import nova_contract
from memagg.tests.functional import nova_double
from memagg.tests.functional import nova_libvirt
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py), although both hosts are libvirtds of
# the module's own: the first move is of a running guest, and QEMU 7.2's
# TCG loses its writes (see above) more often the busier the machine; in
# the parallel lane, whose QEMUs run at nice 5 beside the host lane's, a
# fresh-clone run had the idle guest's kernel crash on host B (list
# corruption in lru_add_drain) 16 s after boot.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

MIB = 1024 * 1024
GUEST_MB = 256
FILL_MB = 32
# What a migration may move beyond the guest's booked memory (device
# state, pages dirtied again while it runs).
SLACK_BYTES = 16 * MIB
MIGRATION_TIMEOUT = 120


@pytest.fixture(scope='module')
def contract():
    return nova_contract.load_contract()


@pytest.fixture
def guest(hypervisors, qemu_workdir):
    """A guest booted on host A; its command port's directory on host A
    only."""
    with hypervisor_hosts.booted_guest(
            hypervisors, qemu_workdir, 'memagg-livemig-%d' % os.getpid(),
            GUEST_MB, [hypervisors.a]) as guest:
        yield guest


@pytest.fixture
def nova(keystone, contract, hypervisors, monkeypatch):
    """make(libvirt_options) -> (the Nova double with a real migrator and
    both hosts' services, memagg's nova compute API driver)."""
    with contextlib.ExitStack() as stack:
        def make(libvirt_options=None):
            double = stack.enter_context(migration_hosts.migrating_nova(
                keystone, contract, hypervisors, libvirt_options))
            conf = nova_catalog.nova_conf(monkeypatch, keystone, ())
            return double, base.load(conf)
        yield make


def _follow(api, uuid):
    """Look at the server (and its migration while it runs) through
    memagg's driver until no task runs; (last state, every look)."""
    looks = []

    def over():
        state = api.get_server_state(uuid)
        progress = (api.get_migration_progress(uuid)
                    if state.task_state else None)
        looks.append((state, progress))
        return state if state.task_state is None else None
    return polling.wait_for(over, MIGRATION_TIMEOUT, interval=0.2,
                            message='live migration of %s over' % uuid), looks


def _domains(host, uuid):
    """(active, persistent) of the domain ``uuid`` on ``host``; None when
    the host has no such domain."""
    conn = host.connect()
    try:
        dom = conn.lookupByUUIDString(uuid)
        return bool(dom.isActive()), bool(dom.isPersistent())
    except libvirt.libvirtError as exc:
        assert exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN, exc
        return None
    finally:
        conn.close()


def _report(what, result):
    print('%s: %s in %.2f s (job %s ms, downtime %s ms), memory %s B '
          'processed of %s, data %s B' % (
              what, result.status, result.seconds, result.time_elapsed_ms,
              result.downtime_ms, result.memory_processed,
              result.job.get('memory_total'), result.data_processed))


def _moved(double, hosts, source, dest, guest):
    """The last migration of ``guest`` completed from ``source`` to
    ``dest`` (Hypervisors): Nova's record and both hosts' libvirt agree;
    its MigrationResult."""
    end = double.finished[-1]
    assert (end.status, end.source, end.dest) == (
        nova_libvirt.COMPLETED, source.name, dest.name)
    assert end.result.error is None
    # Gone from the source (undefined too), running and defined on the
    # destination.
    assert _domains(source, guest.uuid) is None
    assert _domains(dest, guest.uuid) == (True, True)
    result = end.result
    assert 0 < result.time_elapsed_ms and 0 <= result.downtime_ms
    assert result.data_processed >= result.memory_processed
    assert result.seconds < MIGRATION_TIMEOUT
    return result


def test_a_guest_moves_to_host_b_and_back_through_nova(hypervisors, guest,
                                                       nova):
    hosts = hypervisors
    double, api = nova()
    guest.prepare(hosts.b)
    double.add_server(guest.uuid, hosts.a.name)

    # There, running: its heartbeats go on from where they were.
    beat = guest.heartbeat()
    used = (beat['total_kb'] - beat['free_kb']) * 1024
    rss = hosts.a.qemu_rss(guest.name)
    api.live_migrate(guest.uuid, hosts.b.name)
    state, looks = _follow(api, guest.uuid)
    assert double.violations == []
    assert (state.status, state.host) == ('ACTIVE', hosts.b.name)
    # Nova's view while libvirt's job ran.
    assert (looks[0][0].status, looks[0][0].task_state) == (
        'MIGRATING', 'migrating')
    there = _moved(double, hosts, hosts.a, hosts.b, guest)
    _report('running guest, host A -> host B', there)
    # The call Nova's driver makes, with its default [libvirt] options.
    assert nova_libvirt.flag_names(there.call['flags']) == [
        'VIR_MIGRATE_LIVE', 'VIR_MIGRATE_PEER2PEER',
        'VIR_MIGRATE_PERSIST_DEST', 'VIR_MIGRATE_UNDEFINE_SOURCE']
    params = there.call['params']
    assert there.call['dconnuri'] == hosts.b.peer_uri
    assert params['migrate_uri'] == 'tcp://%s' % hosts.b.address
    assert params['bandwidth'] == 0
    assert params['destination_xml'] == params['persistent_xml']
    assert guest.uuid in params['destination_xml']
    # Its command socket is at the same path in host B's /run only (the
    # source QEMU removed host A's).
    assert subprocess.run(hosts.b.command(
        ['test', '-S', guest.command_path])).returncode == 0
    assert not os.path.exists(guest.command_path)
    mark = len(guest.console_text())
    guest.wait_console(r'MEMAGG HEARTBEAT (%d)\b' % (guest.heartbeats() + 1),
                       30, after=mark)
    assert 'MEMAGG READY' not in guest.console_text()[mark:]
    # Memory moved: what the guest uses at least, its booked memory at
    # most (pages dirtied again aside); the non-zero pages were resident
    # in the source's QEMU.
    assert used <= there.memory_processed <= GUEST_MB * MIB + SLACK_BYTES
    assert there.job['memory_normal_bytes'] <= rss

    # And back, with data written on host B: host B's libvirtd opens host
    # A's as its peer. Paused while it moves, as Nova moves paused
    # servers: see the module.
    guest.follow(hosts.b)
    checksum = guest.fill(FILL_MB)
    rss = hosts.b.qemu_rss(guest.name)
    _pause(hosts.b, guest)
    api.live_migrate(guest.uuid, hosts.a.name)
    state, _ = _follow(api, guest.uuid)
    assert (state.status, state.host) == ('ACTIVE', hosts.a.name)
    back = _moved(double, hosts, hosts.b, hosts.a, guest)
    _report('paused guest, host B -> host A', back)
    _resume(hosts.a, guest)
    guest.follow(hosts.a)
    assert guest.check() == checksum
    assert FILL_MB * MIB <= back.memory_processed <= \
        GUEST_MB * MIB + SLACK_BYTES
    assert back.job['memory_normal_bytes'] <= rss
    assert double.violations == []


def _job_stats(host, uuid):
    conn = host.connect()
    try:
        return conn.lookupByUUIDString(uuid).jobStats()
    except libvirt.libvirtError as exc:
        return exc.get_error_message()
    finally:
        conn.close()


def _pause(host, guest):
    conn = host.connect()
    try:
        conn.lookupByUUIDString(guest.uuid).suspend()
    finally:
        conn.close()


def _resume(host, guest):
    """Resume the guest, paused on ``host`` since it left its source."""
    conn = host.connect()
    try:
        dom = conn.lookupByUUIDString(guest.uuid)
        assert dom.info()[0] == libvirt.VIR_DOMAIN_PAUSED
        dom.resume()
    finally:
        conn.close()


def test_failed_migrations_leave_the_guest_running_on_host_a(
        hypervisors, guest, nova):
    hosts = hypervisors
    # Nova's bandwidth cap (MiB/s) keeps the copy going long enough to
    # abort; statistics saved every second.
    double, api = nova({'live_migration_bandwidth': 4,
                        'live_migration_monitor_interval': 1})
    double.add_server(guest.uuid, hosts.a.name)
    checksum = guest.fill(FILL_MB)

    # Host B cannot start the guest (no directory for its command
    # socket): libvirt fails the migration, the guest stays.
    api.live_migrate(guest.uuid, hosts.b.name)
    state, _ = _follow(api, guest.uuid)
    assert (state.status, state.host) == ('ACTIVE', hosts.a.name)
    refused = double.finished[-1]
    _report('refused by host B', refused.result)
    assert refused.status == nova_libvirt.ERROR
    assert 'command.sock' in refused.result.error
    assert _domains(hosts.a, guest.uuid) == (True, True)
    assert _domains(hosts.b, guest.uuid) is None
    assert guest.check() == checksum

    # Aborted through Nova's API once memory is on its way.
    guest.prepare(hosts.b)
    ended_before = len(double.finished)
    api.live_migrate(guest.uuid, hosts.b.name)

    seen = []

    def copying():
        # A migration over before it copied has nothing left to abort.
        assert len(double.finished) == ended_before, \
            double.finished[-1].result
        seen[:] = [api.get_migration_progress(guest.uuid)]
        return seen[0] is not None and (seen[0].bytes_processed or 0) > 0
    try:
        polling.wait_for(copying, MIGRATION_TIMEOUT, interval=0.2,
                         message='memory copied, in Nova\'s migration record')
    except AssertionError as exc:
        # A copy that never shows: say what Nova and libvirt saw.
        move = double.migrations.get(guest.uuid)
        raise AssertionError(
            '%s; last progress %r; job on host A %r; Nova\'s side: %s' % (
                exc, seen, _job_stats(hosts.a, guest.uuid),
                move.live.where() if move else 'no migration')) from None
    assert api.abort_live_migration(guest.uuid) is True
    state, _ = _follow(api, guest.uuid)

    assert double.violations == []
    assert double.abort_errors == []
    assert (state.status, state.host) == ('ACTIVE', hosts.a.name)
    aborted = double.finished[-1]
    _report('aborted', aborted.result)
    assert aborted.status in (nova_libvirt.ERROR, nova_libvirt.CANCELLED)
    assert 0 < aborted.result.memory_processed < GUEST_MB * MIB
    assert _domains(hosts.a, guest.uuid) == (True, True)
    assert _domains(hosts.b, guest.uuid) is None
    assert guest.check() == checksum


def test_the_double_aborts_a_simulated_migration(keystone, contract,
                                                 monkeypatch):
    """Without a migrator, an abort sends the server back to its source
    at the next look (memagg's driver finds the migration to abort)."""
    project_id, user_id = nova_catalog.admin_ids(keystone)
    double = nova_double.NovaDouble(keystone, contract, project_id, user_id)
    server = '6f1c2a9e-0d7b-4c1e-9a55-2b8d3c4e5f60'
    double.add_server(server, 'h1')
    double.behaviours[server] = [nova_double.HOLD]
    try:
        with nova_catalog.in_catalog(keystone, [
                ('compute', 'nova', double.compute_url)]):
            api = base.load(nova_catalog.nova_conf(monkeypatch, keystone, ()))
            api.live_migrate(server, 'h2')
            assert api.get_server_state(server).task_state == 'migrating'
            assert api.abort_live_migration(server) is True
            state = api.get_server_state(server)
            assert (state.status, state.task_state, state.host) == (
                'ACTIVE', None, 'h1')
            assert api.abort_live_migration(server) is False
    finally:
        double.close()
    assert double.violations == []
    [(aborted, _, at)] = double.aborts
    assert aborted == server and nova_contract.version(at) >= (2, 24)
