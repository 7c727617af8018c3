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

"""A crash of the consumer's memagg-swapd under a guest that swaps to it
(issue 18, point 1): the guest keeps its data.

A real TCG guest (memagg/demo/image) gets a grant of four 64 MiB slabs
lent by a donor memagg-swapd over loopback TCP, attached by memagg-compute's
own code (RemoteMemory.attach_grant, the libvirt driver's hot-plug); the
guest makes it its swap, is ballooned below its data and keeps re-reading
it, so its pages go out to the donor and come back all the time. The
consumer's memagg-swapd is SIGKILLed in the middle of that and started
again: it serves the export again from its state directory, the donor and
the local copy, QEMU's NBD client reconnects, and the sum of the
guest's data still matches.

The disk is attached with [swapd] reconnect_delay (QEMU holds the I/O
while it reconnects) where libvirt can ask for it; libvirt 9.0 (this
testbed's) cannot, so QEMU fails the I/O in flight and the VM pauses on
the disk's error (error policies 'stop') until memagg-compute's period
(RemoteMemory.act's resume_paused, run here every 2 s as
[compute] collect_interval would) resumes it. Without either, a guest
process whose page could not be read back lost its data (measured before
this test: "Read-error on swap-device" and an empty sum).

QEMU's side of it where libvirt can ask for reconnect-delay (not this
testbed's): qemu-io on the export with the NBD driver's reconnect-delay
writes, the consumer's memagg-swapd is SIGKILLed and started again, and
the read that follows waits for the reconnection and finds the data;
without reconnect-delay the same read fails.

The last test runs the real services (two_hosts.py: memagg-scheduler on
RabbitMQ and MariaDB, a memagg-compute and memagg-swapd per host): the
grant is made by memagg-scheduler, the consumer's memagg-compute holds the
guest below its data by its balloon, and is restarted while the guest
swaps through memagg-swapd; the guest notices nothing (its swap I/O goes
on over the same connection meanwhile, it runs, and its data's sum matches),
the export is not dropped, and the new memagg-compute finds it again.

Fakes: in the first two tests, memagg-scheduler (FakeScheduler of the unit
tests: nothing there asks it anything), the two hosts being two
memagg-swapd processes on this machine. None in the last; the donor runs
no guest, so its memagg-compute's hypervisor is libvirt's test driver.
The guest tests run their guests under this machine's libvirtd; the last
one's memagg-compute manages its guest alone ([compute] domain_name_regex),
with the host's DAMON: they run in the host lane.
"""
import os
import subprocess
import xml.etree.ElementTree as ElementTree

import libvirt
import pytest

from memagg.common import context
from memagg.common import exceptions
from memagg.db import grants as db_grants
from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional import swapping_guest
from memagg.tests.functional import test_swapd_nbd
from memagg.tests.functional import two_hosts as two_hosts_module
from memagg.tests.functional.two_hosts import two_hosts  # noqa: F401
from memagg.tests.functional.two_hosts import two_hosts_provider  # noqa: F401,E501
from memagg.tests.functional.two_hosts import two_hosts_root  # noqa: F401
from memagg.demo import guest as vm
from memagg.scheduler import rpcapi as scheduler_rpcapi
from memagg.tests.unit.compute import remote_fixtures as helpers
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): a memagg-compute on DAMON.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

GRANT = '7d3c1b2a-9e8f-4a6b-8c5d-4e3f2a1b0c9d'
SECRET = helpers.SECRET
MIB = swapping_guest.MIB
SLAB_MB = swapping_guest.SLAB_MB
SLABS = swapping_guest.SLABS
BALLOON_MB = swapping_guest.BALLOON_MB


@pytest.fixture
def daemons():
    """A donor memagg-swapd lending SLABS slabs and the consumer's, whose
    export sockets QEMU's user may open (in a short path: a unix socket's
    holds 107 bytes)."""
    with two_hosts_module.donor_and_consumer(
            'memagg-crash-', SLAB_MB * SLABS,
            socket_user=two_hosts_module.QEMU_USER) as pair:
        yield pair


@pytest.mark.timeout(1500)
def test_swapd_sigkilled_under_a_swapping_guest_loses_nothing(
        conf, daemons, qemu_workdir):
    donor, consumer = daemons
    with swapping_guest.guest_on(conf, donor, consumer, qemu_workdir,
                                 'memagg-swapd-crash', GRANT) as on:
        guest, lmc = on.guest, on.lmc
        attached = on.attached
        serial = base.swap_serial(GRANT)
        disk = libvirt_driver.find_disk(
            ElementTree.fromstring(guest.dom.XMLDesc()), serial)
        assert disk.find('driver').get('error_policy') == 'stop'
        assert disk.find('driver').get('rerror_policy') == 'stop'
        reconnects = disk.find('source/reconnect') is not None
        checksum = swapping_guest.swap_out(on)
        client = consumer.client()
        before = client.export_stats(GRANT)

        # SIGKILL while the guest reads its data back through the disk.
        mark = swapping_guest.check_swapping_in(guest)
        period = swapping_guest.Resumer(lmc, guest.dom)
        period.start()
        try:
            assert consumer.kill() == -9
            consumer.start()
            client = consumer.client()
            assert client.export_list() == [GRANT]
            # Served again at the socket QEMU knows.
            assert os.path.exists(attached['socket'])
            assert guest.wait_check(mark, 600) == checksum
        finally:
            period.stop()
        beats = guest.heartbeats()
        polling.wait_for(lambda: guest.heartbeats() > beats + 2, 60,
                         interval=0.5, message='heartbeats after the restart')
        assert guest.dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        after = client.export_stats(GRANT)
        # QEMU reconnected, and the pages read back came from the donor.
        assert after['clients'] >= 1, after
        assert after['reads'] > 0 and after['remote_errors'] == 0, after
        assert after['stored_pages'] > 0, (before, after)
        assert guest.check(timeout=600) == checksum
        paused = libvirt.VIR_DOMAIN_PAUSED in period.states
        # QEMU waited for the new memagg-swapd, or the VM paused and was
        # resumed: never an error seen by the guest.
        assert reconnects or paused, period.states
        print('swapd SIGKILLed under a swapping guest: %d MiB swapped '
              'through memagg before, sum %s kept; libvirt kept '
              '<reconnect>: %s, the VM paused meanwhile: %s; stats before '
              '%s, after the restart %s' % (
                  before['write_bytes'] // MIB, checksum, reconnects, paused,
                  before, after))


def _qemu_io_across_a_kill(consumer, socket_path, reconnect_delay):
    """qemu-io over the export with the NBD driver's reconnect-delay:
    a write, a pause of 3 s (QEMU's, while the test kills and restarts
    memagg-swapd after the write), the read of the write. Its output."""
    options = ('driver=raw,file.driver=nbd,file.server.type=unix,'
               'file.server.path=%s,file.export=memagg-swap-%s,'
               'file.reconnect-delay=%d' % (socket_path, GRANT,
                                            reconnect_delay))
    proc = subprocess.Popen(
        ['qemu-io', '--image-opts', options, '-c', 'write -P 0x5a 0 1M',
         '-c', 'sleep 3000', '-c', 'read -P 0x5a 0 1M'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        writes = consumer.client().export_stats(GRANT)['writes']
        polling.wait_for(
            lambda: consumer.client().export_stats(GRANT)['writes'] > writes,
            30, interval=0.05, message='the write of qemu-io')
        assert consumer.kill() == -9
        consumer.start()
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out


def test_qemu_with_reconnect_delay_waits_for_a_restarted_swapd(conf,
                                                               daemons):
    test_swapd_nbd._require('qemu-io')
    donor, consumer = daemons
    driver = libvirt_driver.LibvirtDriver('test:///default')
    prepared = swapping_guest.remote_memory(conf, donor, driver).prepare_slabs(
        GRANT, SECRET, SLAB_MB, [0])
    driver.close()
    export = consumer.client().export_create(
        GRANT, SECRET, SLAB_MB * MIB, SLAB_MB * MIB,
        consumer.local_copy('copy.img'),
        [{'index': 0, 'endpoint': prepared['endpoint'],
          'remote_addr': prepared['slabs'][0]['remote_addr'],
          'rkey': prepared['slabs'][0]['rkey']}])

    out = _qemu_io_across_a_kill(consumer, export['socket'], 30)
    assert 'read 1048576/1048576 bytes at offset 0' in out, out
    assert 'fail' not in out.lower(), out
    # The page came from the donor, through the restarted memagg-swapd.
    assert consumer.client().export_stats(GRANT)['reads'] >= 1

    # Without reconnect-delay, QEMU fails the read at once.
    out = _qemu_io_across_a_kill(consumer, export['socket'], 0)
    assert 'read failed' in out, out


@pytest.fixture
def two_hosts_overrides():
    """The consumer's memagg-compute holds its guest to BALLOON_MB (no
    less: below, the guest thrashes too hard for TCG to get anywhere) and
    asks for no grant by itself: the test asks memagg-scheduler for one."""
    consumer = two_hosts_module.budget(BALLOON_MB, 'memagg-compute-restart$',
                                       min_guest_mb=BALLOON_MB)
    consumer['swapd'] = {'auto_grant': False}
    return {'consumer': consumer}


def _allocate(ctxt, instance_uuid, consumer_host):
    """The grant memagg-scheduler makes, once memagg-compute has reported
    the instance (NotFound before: nothing was made)."""
    try:
        return scheduler_rpcapi.SchedulerAPI().allocate_remote(
            ctxt, instance_uuid, consumer_host, SLAB_MB * SLABS,
            timeout=120)
    except exceptions.NotFound:
        return None


@pytest.mark.timeout(1500)
def test_memagg_compute_restarted_under_a_swapping_guest_changes_nothing(
        two_hosts, qemu_workdir):  # noqa: F811 - pytest fixtures
    hosts = two_hosts
    ctxt = context.get_admin_context()
    consumer = hosts.consumer.swapd.client()
    conn = libvirt.open(guest_fixtures.URI)
    guest = vm.Guest(conn, qemu_workdir, 'memagg-compute-restart',
                     memory_mb=swapping_guest.MEMORY_MB)
    try:
        guest.start()
        grant = polling.wait_for(
            lambda: _allocate(ctxt, guest.uuid, hosts.consumer.name), 120,
            interval=1, message='a grant for the guest')
        assert grant['granted_mb'] == SLAB_MB * SLABS, grant
        dev = guest.wait_swap_disk(base.swap_serial(grant['uuid']), 120)
        checksum = guest.fill(swapping_guest.DATA_MB, timeout=600)
        swapping_guest.wait_swapped(guest, dev)

        # The restart, while the guest reads its data back through the disk.
        mark = swapping_guest.check_swapping_in(guest)
        before = consumer.export_stats(grant['uuid'])
        assert hosts.restart_compute(hosts.consumer) == 0
        during = consumer.export_stats(grant['uuid'])
        assert guest.wait_check(mark, 600) == checksum
        after = consumer.export_stats(grant['uuid'])
        # Swap I/O went on through the restart, over the same connection
        # (memagg-swapd counts from its start: no restart of it either).
        assert during['reads'] > before['reads'], (before, during)
        assert after['reads'] >= during['reads'] and after['clients'] == 1
        assert after['remote_errors'] == 0, after
        assert consumer.export_list() == [grant['uuid']]
        assert db_grants.grant_get(ctxt, grant['uuid']).status == 'active'
        assert guest.dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        # The new memagg-compute found the export and its VM.
        polling.wait_for(
            lambda: 'holds 1 exports' in hosts.consumer.compute.log(), 60,
            interval=0.5, message='the new memagg-compute recovering')
        assert guest.check(timeout=600) == checksum
        print('memagg-compute restarted under a swapping guest: sum %s '
              'kept, %d reads through memagg-swapd during the restart; '
              'stats %s' % (checksum, during['reads'] - before['reads'],
                            after))
    finally:
        print('guest console (tail):\n%s' % guest.console_text()[-4000:])
        guest.destroy()
        conn.close()
