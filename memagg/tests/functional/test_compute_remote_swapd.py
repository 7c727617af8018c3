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

"""memagg-compute's remote-memory side against real memagg-swapd daemons:
a donor (lending 256 MiB over TCP on loopback) and a consumer.

prepare_slabs is GRANT_ALLOC on the donor (partial when out of capacity,
an empty list when nothing is left), attach_grant a real EXPORT_CREATE on
the consumer over the donor's slabs, the swap ghost comes from real NBD
I/O (qemu-io writing and reading the export the way a guest's swap does),
a restarted memagg-compute finds its exports again without dropping any,
and a gone VM's export is dropped with its local copy.

The hypervisor is the in-test Driver of remote_fixtures.py (the real
hot-plug is test_libvirt_swap_disk_guest.py and the two-host guest test);
memagg-scheduler the in-test FakeScheduler.
"""
import os
import subprocess

import pytest

from memagg.compute import remote
from memagg.compute import remote_grants
from memagg.tests.functional import two_hosts
from memagg.tests.unit.compute import remote_fixtures as helpers

pytestmark = [pytest.mark.functional, pytest.mark.slow]

VM = helpers.VM
GRANT = helpers.GRANT
GRANT2 = '9a8b7c6d-5e4f-4321-8fed-cba987654321'
SECRET = helpers.SECRET
MIB = 1024 * 1024


@pytest.fixture
def daemons():
    with two_hosts.donor_and_consumer('memagg-c2-swapd-', 256,
                                      capacity_mb=0) as pair:
        yield pair


def lmc_of(conf, daemon):
    conf.config(control_socket=daemon.control, export_dir=daemon.export_dir,
                state_dir=daemon.state_dir, group='swapd')
    return remote.RemoteMemory(helpers.Driver(), daemon.name, conf.conf,
                               helpers.FakeScheduler(),
                               client=daemon.client())


def test_prepare_slabs_on_a_real_donor_partial_then_empty(conf, daemons):
    donor, _ = daemons
    lmc = lmc_of(conf, donor)
    reply = lmc.prepare_slabs(GRANT, SECRET, 64, [0, 1, 2, 3, 4])
    assert reply['endpoint'] == donor.endpoint
    # 256 MiB of capacity: four slabs of 64 MiB, the fifth refused.
    assert sorted(s['index'] for s in reply['slabs']) == [0, 1, 2, 3]
    assert len({s['remote_addr'] for s in reply['slabs']}) == 4
    assert donor.client().donor_stats()['used'] == 256 * MIB
    assert lmc.prepare_slabs(GRANT2, SECRET, 64, [0]) == {'endpoint': None,
                                                          'slabs': []}
    assert lmc.free_slabs(GRANT, [3]) == {'freed': 1}
    assert lmc.free_slabs(GRANT) == {'freed': 3}
    assert lmc.free_slabs(GRANT) == {'freed': 0}
    assert donor.client().donor_stats()['used'] == 0


def _qemu_io(socket_path, export, *commands):
    args = ['qemu-io', '-f', 'raw',
            'nbd+unix:///%s?socket=%s' % (export, socket_path)]
    for command in commands:
        args += ['-c', command]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and 'error' not in out.stdout.lower(), (
        out.stdout + out.stderr)
    return out.stdout


def test_attach_grant_creates_a_real_export_fed_back_as_swap_ghost(
        conf, daemons):
    donor, consumer = daemons
    lender = lmc_of(conf, donor)
    prepared = lender.prepare_slabs(GRANT, SECRET, 64, [0, 1])
    grant = helpers.grant_dict(slabs=[
        {'index': s['index'], 'endpoint': prepared['endpoint'],
         'remote_addr': s['remote_addr'], 'rkey': s['rkey'],
         'status': 'prepared'} for s in prepared['slabs']])
    lmc = lmc_of(conf, consumer)
    reply = lmc.attach_grant(grant)
    assert reply['serial'] == 'memagg-swap-0b4f7e0c'
    assert os.path.exists(reply['socket'])
    assert consumer.client().export_list() == [GRANT]
    described = consumer.client().export_describe(GRANT)
    assert described['local'] == remote_grants.local_copy_path(
        consumer.state_dir, VM, GRANT)
    assert described['size'] == 128 * MIB
    assert lmc.driver.attached == [(VM, reply['socket'],
                                    'memagg-swap-' + GRANT,
                                    'memagg-swap-0b4f7e0c')]
    # Attaching again (a retried RPC) creates nothing new.
    assert lmc.attach_grant(grant)['socket'] == reply['socket']
    assert consumer.client().export_list() == [GRANT]

    # Swap I/O as a guest makes it: pages 0..2 out, page 0 back in.
    _qemu_io(reply['socket'], 'memagg-swap-' + GRANT,
             'write -P 0x11 0 4096', 'write -P 0x22 4096 4096',
             'write -P 0x33 8192 4096', 'read -P 0x11 0 4096')
    ghost = lmc.ghost_periods([helpers.dom(VM)])[VM]
    assert (ghost.swap_outs, ghost.swap_ins) == (3, 1)
    assert ghost.distance_pages == 1024     # distance 3, first bucket
    # The pages went to the donor.
    assert donor.client().donor_stats()['used'] == 128 * MIB

    # memagg-compute restarts: it finds the export and its VM again.
    again = lmc_of(conf, consumer)
    again.recover()
    assert again.grants_by_instance()[VM].uuid == GRANT
    assert consumer.client().export_list() == [GRANT]

    # The donor wants its memory back: the pages are served locally.
    assert again.reclaim_slabs(GRANT) == {'reclaimed': 2}
    assert lender.free_slabs(GRANT) == {'freed': 2}
    _qemu_io(reply['socket'], 'memagg-swap-' + GRANT,
             'read -P 0x22 4096 4096', 'read -P 0x33 8192 4096')

    # The VM is gone: after two periods its grant is released and its
    # export dropped with the local copy.
    for _ in range(remote.GONE_PERIODS):
        again.plan_period(helpers.period(0), [])
    again.act(None)
    assert again.scheduler_api.calls == [('release_grant', GRANT, 180)]
    assert consumer.client().export_list() == []
    assert not os.path.exists(described['local'])
