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

"""Metadata-only live migration end to end (ALGORITHMS.md §5,
doc/source/migration.rst): a guest with most of its memory on memagg's
remote swap is live-migrated by memagg-scheduler, through memagg's nova
driver, the real Keystone and the Nova double whose migrator moves it as
Nova's libvirt driver does, between the two libvirtds of this machine
(hypervisor_hosts.py); memagg-swapd and memagg-compute run on both hosts
and on a donor (migration_hosts.py).

The guest (256 MiB booked) is held to a small budget by memagg's local
policy on host A and gets a grant of its whole booked size from the donor
before it fills 200 MiB of random data that it then leaves alone (idle
memory, what memagg lends out): most of that goes to the donor through
host A's export once. The migration is asked for as POST /v1/migrations
asks (a one-action plan, cast to memagg-scheduler).

A guest whose grant has slabs in host A's local copy only (the slow
tier), with a promotion or a demotion held in the middle while its
migration is asked for, migrates once the move ended and its slabs were
promoted to the donor (issue 38, point 5).

QEMU 7.2's TCG now and then misses writes of a guest busy while it
migrates (test_live_migration_hosts.py): the guest is paused before the
migration and resumed on its destination, as Nova live-migrates a paused
server.

Both hosts are libvirtds in mount namespaces of their own (not this
machine's libvirtd), so guest tests running at the same time, whose
memagg-computes manage every domain of this machine's libvirtd, do not
touch this module's guests.
"""
import contextlib
import os
import signal
import threading
import time

import libvirt
import libvirt_qemu
import pytest

from memagg.api.controllers import migrations as migrations_api
from memagg.common import context
from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.db import instances as db_instances
from memagg.db import migrations as db_migrations
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests.functional import hypervisor_hosts
from memagg.tests.functional.hypervisor_hosts import hypervisors_fixture  # noqa: F401,E501
from memagg.tests.functional import migration_hosts
from memagg.tests.functional import nova_contract
from memagg.tests.functional import nova_libvirt
from memagg.tests.functional import two_hosts
from memagg.tests.functional.two_hosts import two_hosts_root  # noqa: F401
from memagg.tests import polling

# The parallel lane: nothing here is host-wide. Both hosts are libvirtds of
# the module's own, each memagg-compute manages this module's guest alone,
# and neither samples with DAMON (see overrides()).
pytestmark = [pytest.mark.functional, pytest.mark.slow]

MIB = 1024 * 1024
PAGE = 4096
GUEST_MB = 256
# What memagg's local policy gives host A's guests: the guest is held
# there, well below its data.
BUDGET_MB = 80
DATA_MB = 200
REMOTE_MB = 128
# What a migration may move beyond the guest's resident memory (device
# state, page headers, the balloon's slack).
SLACK_BYTES = 48 * MIB
MIGRATION_TIMEOUT = 180


@pytest.fixture
def overrides():
    # The grant is the test's own: no second one on top. The guest is
    # held at BUDGET_MB, never below: at 64 MiB, before its swap disk was
    # on, a fresh guest (little WSS) ran out of memory probing the
    # hot-plugged disk and panicked (a CI run).
    #
    # A control call answers within a minute (not the default 10 s), and
    # the scheduler's calls to a host too: the tier moves test holds a
    # move in the middle with host A's memagg-swapd stopped while the
    # migration is asked for. Slabs move between the tiers only when a
    # test asks: host A's tier policy runs once an hour.
    consumer = dict(two_hosts.budget(BUDGET_MB, 'memagg-metamig-',
                                     min_guest_mb=BUDGET_MB),
                    swapd={'auto_grant': False, 'control_timeout': 60},
                    reservoir={'tier_interval': 3600})
    return {
        # Host A's memagg-compute estimates from the balloon's statistics:
        # it holds the guest at BUDGET_MB whatever it estimates, and its
        # WSS is not what this module proves. The default estimator's
        # DAMON sampler would need DAMON, which is host-wide (one user at
        # a time: the host lane's).
        'a': dict(consumer, wss={'estimator': 'stats'}),
        # Host B's memagg-compute estimates from the swap ghost alone: a
        # WSS it reports is made of the swap-ins it drained from B's
        # export.
        'b': dict(consumer, wss={'estimator': 'swap_ghost'}),
        'scheduler': {'consolidation': {'max_retries': 0,
                                        'poll_interval': 0.5,
                                        'migration_timeout':
                                        MIGRATION_TIMEOUT},
                      'reservoir': {'prepare_timeout': 60}},
    }


@pytest.fixture
def nova(keystone, hypervisors):
    """make(libvirt_options): the Nova double with a real migrator between
    the hypervisors, in Keystone's catalog until the test ends."""
    with contextlib.ExitStack() as stack:
        def make(libvirt_options=None):
            return stack.enter_context(migration_hosts.migrating_nova(
                keystone, nova_contract.load_contract(), hypervisors,
                libvirt_options))
        yield make


@pytest.fixture
def provider():
    """The memagg-swapds' libfabric provider (the donor lends over the rdma
    transport); None: TCP. A test parametrizes it."""
    return None


@pytest.fixture
def memagg(conf, mysql_db, rabbit_url, two_hosts_root,  # noqa: F811
           hypervisors, keystone, overrides, provider):  # noqa: F811
    """memagg on hosts A and B and a donor (migration_hosts), this test
    process an RPC client of them."""
    with two_hosts.running(conf, migration_hosts.MigrationHosts(
            two_hosts_root, mysql_db, rabbit_url, hypervisors, keystone,
            overrides, provider)) as hosts:
        yield hosts


@pytest.fixture
def guest(hypervisors, qemu_workdir):
    """A 256 MiB guest booted on host A, persistent as Nova's are."""
    with hypervisor_hosts.booted_guest(
            hypervisors, qemu_workdir, 'memagg-metamig-%d' % os.getpid(),
            GUEST_MB, [hypervisors.a, hypervisors.b]) as guest:
        yield guest


class _Clock:
    def __init__(self):
        self.started = time.monotonic()
        self.laps = {}

    def lap(self, name):
        self.laps[name] = round(time.monotonic() - self.started, 1)


def _on_remote_swap(hosts, guest, clock):
    """Give the guest a grant of its booked size from the donor and have
    it swap at least REMOTE_MB MiB of its data there; (grant, checksum,
    swap device)."""
    ctxt = context.get_admin_context()
    polling.wait_for(lambda: _instance(ctxt, guest.uuid, hosts.a.name), 60,
                     interval=0.5, message='host A reporting the guest')
    scheduler = scheduler_rpcapi.SchedulerAPI()

    def granted():
        try:
            return scheduler.allocate_remote(ctxt, guest.uuid, hosts.a.name,
                                             GUEST_MB, timeout=60)
        except scheduler_rpcapi.RemoteMemoryUnavailable:
            return None  # the donor has not reported what it lends yet
    grant = polling.wait_for(granted, 60, interval=1,
                             message='a grant for the guest')
    assert grant['granted_mb'] == GUEST_MB, grant
    serial = 'memagg-swap-' + grant['uuid'].replace('-', '')[:8]
    dev = guest.wait_swap_disk(serial, 120)
    clock.lap('swap disk on')
    export = hosts.a.swapd.client()

    def swapped():
        beat = guest.heartbeat()
        used = beat['swaps'].get(dev, {}).get('used_kb', 0)
        stored = export.export_stats(grant['uuid'])['stored_pages'] * PAGE
        return used >= REMOTE_MB * 1024 and stored >= REMOTE_MB * MIB
    with _held(guest.dom):
        checksum = guest.fill(DATA_MB, timeout=600, cold=True)
        clock.lap('filled')
        polling.wait_for(swapped, 120, interval=1, message=(
            '%d MiB of the guest on the donor' % REMOTE_MB))
    clock.lap('on remote swap')
    return db_grants.grant_get(ctxt, grant['uuid']), checksum, dev


@contextlib.contextmanager
def _held(dom):
    """Squeeze the guest's balloon to BUDGET_MB, and keep it at most there
    while the data swaps out: host A's memagg-compute holds it to that
    budget too, but its estimators see a guest that needs more while it
    fills (a balloon growing back would keep the data resident)."""
    stop = threading.Event()

    def hold():
        while not stop.is_set():
            try:
                if dom.info()[2] > (BUDGET_MB + 8) * 1024:
                    dom.setMemoryFlags(BUDGET_MB * 1024,
                                       libvirt.VIR_DOMAIN_AFFECT_LIVE)
            except libvirt.libvirtError:
                return  # the guest died: the test's waits say so
            stop.wait(0.5)
    dom.setMemoryFlags(BUDGET_MB * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    polling.wait_for(
        lambda: dom.memoryStats()['actual'] <= (BUDGET_MB + 8) * 1024, 60,
        interval=0.5, message='the guest\'s balloon at %d MiB' % BUDGET_MB)
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def _instance(ctxt, uuid, host):
    try:
        instance = db_instances.instance_get(ctxt, uuid)
    except exceptions.NotFound:
        return None
    return instance if instance.host == host else None


def _migrate(hosts, guest):
    """Ask memagg for the guest's migration to host B as POST
    /v1/migrations does; the migration row."""
    ctxt = context.get_admin_context()
    audit, migration = db_migrations.migration_request(
        ctxt, guest.uuid, hosts.a.name, hosts.b.name,
        migrations_api.REQUESTED)
    scheduler_rpcapi.SchedulerAPI().execute_audit(ctxt, audit)
    return migration


def _ended(migration_uuid):
    ctxt = context.get_admin_context()
    return polling.wait_for(
        lambda: _if_ended(db_migrations.migration_get(ctxt, migration_uuid)),
        MIGRATION_TIMEOUT + 60, interval=0.5,
        message='migration %s ended' % migration_uuid)


def _if_ended(row):
    return row if row.status in ('succeeded', 'failed') else None


def _domain_state(host, uuid):
    """libvirt's state of the domain on ``host``, None when absent."""
    conn = host.connect()
    try:
        return conn.lookupByUUIDString(uuid).info()[0]
    except libvirt.libvirtError as exc:
        assert exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN, exc
        return None
    finally:
        conn.close()


def _set_paused(host, uuid, paused):
    conn = host.connect()
    try:
        dom = conn.lookupByUUIDString(uuid)
        if paused:
            dom.suspend()
        else:
            assert dom.info()[0] == libvirt.VIR_DOMAIN_PAUSED
            dom.resume()
    finally:
        conn.close()


def _check(hosts, host, guest):
    """The guest's data sum, read again on ``host``; when it does not come,
    the failure carries QEMU's view of the guest's disks (a swap request
    that never completes shows there) and every daemon's log."""
    try:
        return guest.check(timeout=600)
    except AssertionError as exc:
        conn = host.connect()
        try:
            dom = conn.lookupByUUIDString(guest.uuid)
            block = [libvirt_qemu.qemuMonitorCommand(
                dom, '{"execute": "%s"}' % command, 0)
                for command in ('query-block', 'query-blockstats')]
        except libvirt.libvirtError as error:
            block = ['QEMU does not answer: %s' % error]
        finally:
            conn.close()
        raise AssertionError('%s\n--- QEMU on %s\n%s\n%s' % (
            exc, host.name, '\n'.join(block), hosts.logs())) from None


# The donor lends over TCP, and over the rdma transport on libfabric's
# tcp provider (issue 37): the slabs stay where they are either way.
@pytest.mark.timeout(900)
@pytest.mark.parametrize('provider', [None, 'tcp'],
                         ids=['tcp-transport', 'fabric-tcp'])
def test_a_guest_on_remote_swap_moves_its_resident_memory_only(
        memagg, hypervisors, nova, guest, provider):
    """A guest with at least half of its memory on memagg's remote swap is
    live-migrated by memagg between two libvirtds; a checksum of the
    guest's data matches before and after; libvirt's job statistics show
    the memory moved is about the guest's resident set; the grant, its
    slabs on the donor and the ghost stream follow the VM."""
    hosts = memagg
    ctxt = context.get_admin_context()
    clock = _Clock()
    double = nova()
    double.add_server(guest.uuid, hosts.a.name)
    grant, checksum, dev = _on_remote_swap(hosts, guest, clock)
    assert {s.endpoint for s in grant.slabs} == {hosts.donor.swapd.endpoint}
    assert hosts.donor.swapd.endpoint.startswith(
        'rdma://' if provider else 'tcp://')
    donor = hosts.donor.swapd.client()
    lent = donor.donor_stats()['used']
    assert lent == GUEST_MB * MIB
    a_stats = hosts.a.swapd.client().export_stats(grant.uuid)

    # Paused while it moves: see the module. What is on the donor now is
    # what the guest's memagg swap area holds.
    _set_paused(hypervisors.a, guest.uuid, True)
    on_donor = guest.heartbeat()['swaps'][dev]['used_kb'] * 1024
    rss = hypervisors.a.qemu_rss(guest.name)
    migration = _migrate(hosts, guest)
    row = _ended(migration.uuid)
    clock.lap('migrated')
    assert (row.status, row.error) == ('succeeded', None), hosts.logs()
    assert double.violations == []
    end = double.finished[-1]
    assert (end.status, end.source, end.dest) == (
        nova_libvirt.COMPLETED, hosts.a.name, hosts.b.name)
    assert _domain_state(hypervisors.a, guest.uuid) is None
    _set_paused(hypervisors.b, guest.uuid, False)
    guest.follow(hypervisors.b)

    # The grant follows the VM: consumed by B, served by B's memagg-swapd
    # only, over the same slabs on the donor, which neither freed nor
    # copied any.
    moved = db_grants.grant_get(ctxt, grant.uuid)
    assert (moved.status, moved.consumer_host) == ('active', hosts.b.name)
    assert [(s.index, s.donor_host, s.remote_addr) for s in moved.slabs] == \
        [(s.index, s.donor_host, s.remote_addr) for s in grant.slabs]
    assert grant.uuid not in hosts.a.swapd.client().export_list()
    assert grant.uuid in hosts.b.swapd.client().export_list()
    assert not os.path.exists(hosts.a.swapd.socket_path(grant.uuid))
    assert os.path.exists(hosts.b.swapd.socket_path(grant.uuid))
    assert donor.donor_stats()['used'] == lent

    # Its data is whole, read back through B's export: swap-ins from the
    # donor, drained by B's memagg-compute (its swap-ghost estimate).
    b_export = hosts.b.swapd.client()
    assert _check(hosts, hypervisors.b, guest) == checksum
    clock.lap('checked on B')
    b_stats = b_export.export_stats(grant.uuid)
    assert b_stats['reads'] > 0 and b_stats['remote_errors'] == 0, b_stats
    instance = polling.wait_for(
        lambda: _ghost_estimate(ctxt, guest.uuid, hosts.b.name), 60,
        interval=1, message='host B reporting a swap-ghost WSS')

    # What memagg recorded: libvirt's bytes, about the resident memory.
    row = polling.wait_for(
        lambda: _copy_done(db_migrations.migration_get(ctxt,
                                                       migration.uuid)),
        120, interval=1, message='the local copy rebuilt on host B')
    clock.lap('copy rebuilt')
    assert b_export.export_stats(grant.uuid)['rebuild_left'] == 0
    booked = GUEST_MB * MIB
    resident = booked - on_donor
    job = end.result.job
    assert row.remote_mb >= REMOTE_MB, row.remote_mb
    assert row.remote_share >= 0.5, row.remote_share
    assert row.bytes_transferred == job['data_processed'], (
        row.bytes_transferred, job)
    # remote_mb counts every page ever written to the swap disk, at least
    # what it holds now.
    assert row.remote_mb * MIB >= on_donor
    assert row.bytes_transferred <= resident + SLACK_BYTES, (
        row.bytes_transferred, resident)
    assert row.bytes_transferred <= rss + SLACK_BYTES, (
        row.bytes_transferred, rss)
    assert row.bytes_transferred < booked / 2
    assert row.downtime_ms is not None and row.downtime_ms >= 0
    assert row.downtime_ms == job['downtime']
    assert row.duration_s > 0
    print('metadata-only migration: %.1f MiB moved by libvirt (memory '
          '%.1f MiB) of %d MiB booked; %.1f MiB in the guest\'s swap on '
          'the donor, so %.1f MiB resident (QEMU RSS on A %.1f MiB); '
          'remote_mb %d, share %.2f; %.2f s, downtime %s ms; host A '
          'wrote %.1f MiB to the donor; host B read %.1f MiB back '
          '(%d reads); B reported WSS %s MiB (%s); timings %s' % (
              row.bytes_transferred / MIB, job['memory_processed'] / MIB,
              GUEST_MB, on_donor / MIB, resident / MIB, rss / MIB,
              row.remote_mb, row.remote_share,
              row.duration_s, row.downtime_ms, a_stats['write_bytes'] / MIB,
              b_stats['read_bytes'] / MIB, b_stats['reads'],
              instance.wss_mb, instance.estimator, clock.laps))


def _ghost_estimate(ctxt, uuid, host):
    instance = _instance(ctxt, uuid, host)
    if instance is None or instance.wss_mb is None:
        return None
    return instance if instance.estimator.startswith('swap_ghost') else None


def _copy_done(row):
    return row if row.local_copy_left_mb == 0 else None


@pytest.mark.timeout(900)
def test_the_guest_stays_on_host_a_when_host_b_loses_its_swapd(
        memagg, hypervisors, nova, guest):
    """Host B's memagg-swapd is killed (SIGKILL) while libvirt copies the
    guest's memory (slowed down by Nova's bandwidth cap): the guest runs
    on host A with its data whole, the migration failed with a reason, the
    grant is still host A's and A still serves it.

    libvirt alone would complete this migration (B's QEMU opened the
    export when the incoming migration started; moving memory and the
    switch-over never touch the disk): memagg-scheduler, which asks the
    destination at each look, aborts it before the switch-over."""
    hosts = memagg
    ctxt = context.get_admin_context()
    clock = _Clock()
    double = nova({'live_migration_bandwidth': 4,
                   'live_migration_monitor_interval': 1})
    double.add_server(guest.uuid, hosts.a.name)
    grant, checksum, _ = _on_remote_swap(hosts, guest, clock)
    lent = hosts.donor.swapd.client().donor_stats()['used']

    _set_paused(hypervisors.a, guest.uuid, True)
    migration = _migrate(hosts, guest)

    # Killed once B's QEMU, started for the incoming migration, has
    # opened the export, while memory is copied.
    def copying():
        move = double.migrations.get(guest.uuid)
        return (move is not None and move.live is not None
                and _domain_state(hypervisors.b, guest.uuid) is not None)
    polling.wait_for(copying, 60, interval=0.2,
                     message='Nova migrating the guest')
    clock.lap('migrating')
    assert grant.uuid in hosts.b.swapd.client().export_list()
    hosts.b.swapd.kill()
    clock.lap('host B\'s swapd killed')
    row = _ended(migration.uuid)
    clock.lap('migration ended')
    end = double.finished[-1]
    print('migration with host B\'s swapd killed: %s, error %r; Nova\'s '
          'migration %s (%s); timings %s' % (
              row.status, row.error, end.status, end.result.error,
              clock.laps))
    assert row.status == 'failed', (row.status, hosts.logs())
    assert 'no longer serves grant %s' % grant.uuid in row.error, row.error
    assert end.status in (nova_libvirt.ERROR, nova_libvirt.CANCELLED)
    assert double.violations == []
    assert _domain_state(hypervisors.b, guest.uuid) is None
    _set_paused(hypervisors.a, guest.uuid, False)
    assert _check(hosts, hypervisors.a, guest) == checksum
    kept = db_grants.grant_get(ctxt, grant.uuid)
    assert (kept.status, kept.consumer_host) == ('active', hosts.a.name)
    assert grant.uuid in hosts.a.swapd.client().export_list()
    assert hosts.donor.swapd.client().donor_stats()['used'] == lent


def _slab_status(ctxt, grant_uuid, index):
    return db_grants.grant_get(ctxt, grant_uuid).slabs[index].status


@pytest.mark.timeout(900)
@pytest.mark.parametrize('move', ['promotion', 'demotion'])
def test_a_guest_migrates_in_the_middle_of_a_move_between_the_tiers(
        memagg, hypervisors, nova, guest, move):
    """A guest on remote swap has two of its grant's four slabs in host
    A's local copy only (demoted: the slow tier). memagg-scheduler starts
    promoting one of them (or demoting one more), and is held in the
    middle: host A's memagg-swapd, which copies the slab to the donor (or
    starts serving it from its local copy), is stopped (SIGSTOP). The
    guest's migration to host B is asked for meanwhile: it waits for the
    move, which ends once the memagg-swapd runs again, then promotes the
    slabs still in A's local copy only, and only then has B adopt the
    grant. The guest's data is whole on B, read through B's export from
    the donor, which holds every slab again; no page was lost."""
    hosts = memagg
    ctxt = context.get_admin_context()
    clock = _Clock()
    double = nova()
    double.add_server(guest.uuid, hosts.a.name)
    grant, checksum, _ = _on_remote_swap(hosts, guest, clock)
    assert [s.status for s in grant.slabs] == ['active'] * 4
    donor = hosts.donor.swapd.client()
    scheduler = scheduler_rpcapi.SchedulerAPI()
    _set_paused(hypervisors.a, guest.uuid, True)

    scheduler.move_slabs(ctxt, grant.uuid, hosts.a.name, [2, 3], [])
    polling.wait_for(
        lambda: [s.status for s in db_grants.grant_get(
            ctxt, grant.uuid).slabs] == ['active'] * 2 + ['reclaimed'] * 2,
        60, interval=0.2, message='slabs 2 and 3 in host A\'s local copy')
    assert donor.donor_stats()['used'] == GUEST_MB * MIB // 2
    clock.lap('two slabs demoted')

    held, moving = (2, 'promoting') if move == 'promotion' else (
        1, 'reclaiming')
    swapd = hosts.a.swapd.proc
    swapd.send_signal(signal.SIGSTOP)
    try:
        if move == 'promotion':
            scheduler.move_slabs(ctxt, grant.uuid, hosts.a.name, [], [held])

            # Prepared on the donor: the copy is host A's to make. (A
            # reclaimed slab keeps its old endpoint: a promotion clears
            # it, then records the donor's.)
            def prepared():
                slab = db_grants.grant_get(ctxt, grant.uuid).slabs[held]
                return slab.status == moving and slab.endpoint
            polling.wait_for(prepared, 60, interval=0.2,
                             message='slab %d prepared on the donor' % held)
        else:
            scheduler.move_slabs(ctxt, grant.uuid, hosts.a.name, [held], [])
            polling.wait_for(
                lambda: _slab_status(ctxt, grant.uuid, held) == moving, 60,
                interval=0.2, message='slab %d reclaiming' % held)
        migration = _migrate(hosts, guest)
        polling.wait_for(
            lambda: 'Migration %s waits for slabs' % migration.uuid
            in hosts.scheduler.log(), 60, interval=0.2,
            message='the migration waiting for the %s' % move)
        assert _slab_status(ctxt, grant.uuid, held) == moving
        clock.lap('migration waiting')
    finally:
        swapd.send_signal(signal.SIGCONT)

    row = _ended(migration.uuid)
    clock.lap('migrated')
    assert (row.status, row.error) == ('succeeded', None), hosts.logs()
    moved = db_grants.grant_get(ctxt, grant.uuid)
    assert moved.consumer_host == hosts.b.name
    assert [(s.status, s.donor_host) for s in moved.slabs] == [
        ('active', hosts.donor.name)] * 4
    assert donor.donor_stats()['used'] == GUEST_MB * MIB
    _set_paused(hypervisors.b, guest.uuid, False)
    guest.follow(hypervisors.b)

    assert _check(hosts, hypervisors.b, guest) == checksum
    clock.lap('checked on B')
    stats = hosts.b.swapd.client().export_stats(grant.uuid)
    assert stats['reads'] > 0 and stats['remote_errors'] == 0, stats
    assert stats['l2_used'] == 0, stats
    print('migration in the middle of a %s: %s; B read %.1f MiB back '
          '(%d reads); timings %s' % (
              move, row.status, stats['read_bytes'] / MIB, stats['reads'],
              clock.laps))
