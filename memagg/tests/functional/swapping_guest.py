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

"""A TCG guest that swaps to a donor's memagg-swapd through a grant
memagg-compute's own code attached (RemoteMemory, the libvirt driver's
hot-plug), memagg-scheduler being FakeScheduler: the sizes and steps of
test_swapd_crash_guest, test_fabric_guest and test_tiers_guest."""
import contextlib
import dataclasses
import threading

import libvirt

from memagg.compute import remote
from memagg.demo import guest as vm
from memagg.drivers.hypervisor import base
from memagg.drivers.hypervisor import libvirt_driver
from memagg.tests.functional import guest_fixtures
from memagg.tests.unit.compute import remote_fixtures as helpers
from memagg.tests import polling

MIB = 1024 * 1024
SLAB_MB = 64
SLABS = 4
MEMORY_MB = 256
# The guest is ballooned to BALLOON_MB while it keeps DATA_MB of random data
# in a tmpfs: most of it lives on the swap disk.
BALLOON_MB = 112
DATA_MB = 160
SWAPPED_MB = 48


def remote_memory(conf, daemon, driver):
    """memagg-compute's RemoteMemory on ``daemon`` (a two_hosts.Swapd)."""
    conf.config(control_socket=daemon.control, export_dir=daemon.export_dir,
                state_dir=daemon.state_dir, group='swapd')
    return remote.RemoteMemory(driver, daemon.name, conf.conf,
                               helpers.FakeScheduler(),
                               client=daemon.client())


def attach(conf, donor, consumer, driver, grant_uuid, instance_uuid,
           slab_mb=SLAB_MB, slabs=SLABS, local=()):
    """``slabs`` slabs of ``slab_mb`` of ``grant_uuid``, those not in
    ``local`` prepared on ``donor``, those in ``local`` in the local tier
    (as memagg-scheduler grants them when the donors are short), and the
    grant attached to the instance on ``consumer``, as memagg-compute
    does: (the donor's prepare_slabs answer, attach_grant's, the
    consumer's RemoteMemory, the donor's). The consumer's is made last:
    ``conf``'s [swapd] is the consumer's then."""
    lender = remote_memory(conf, donor, driver)
    on_donor = [index for index in range(slabs) if index not in local]
    prepared = lender.prepare_slabs(grant_uuid, helpers.SECRET, slab_mb,
                                    on_donor)
    assert len(prepared['slabs']) == len(on_donor), prepared
    grant = helpers.grant_dict(
        uuid=grant_uuid, instance_uuid=instance_uuid, slab_size_mb=slab_mb,
        granted_mb=slab_mb * len(on_donor),
        slabs=[{'index': s['index'], 'endpoint': prepared['endpoint'],
                'remote_addr': s['remote_addr'], 'rkey': s['rkey'],
                'status': 'prepared'} for s in prepared['slabs']]
        + [{'index': index, 'status': 'reclaimed'} for index in local])
    lmc = remote_memory(conf, consumer, driver)
    return prepared, lmc.attach_grant(grant), lmc, lender


@dataclasses.dataclass
class Swapping:
    """A guest with its grant attached (``guest_on``): the prepare_slabs
    and attach_grant answers, the consumer's and the donor's
    RemoteMemory, the guest's device of the swap disk."""

    guest: vm.Guest
    driver: libvirt_driver.LibvirtDriver
    prepared: dict
    attached: dict
    lmc: remote.RemoteMemory
    lender: remote.RemoteMemory
    dev: str


@contextlib.contextmanager
def guest_on(conf, donor, consumer, workdir, name, grant_uuid, **layout):
    """A guest ``name`` under this machine's libvirtd, the grant
    ``grant_uuid`` of SLABS slabs on ``donor`` (or as ``layout``, attach's
    slab_mb, slabs and local, says) attached to it through ``consumer``
    (``attach``), its swap disk up: a Swapping. The guest's console tail
    is printed and the guest destroyed afterwards."""
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    driver = libvirt_driver.LibvirtDriver(guest_fixtures.URI)
    guest = vm.Guest(conn, workdir, name, memory_mb=MEMORY_MB)
    try:
        guest.start()
        prepared, attached, lmc, lender = attach(
            conf, donor, consumer, driver, grant_uuid, guest.uuid, **layout)
        dev = guest.wait_swap_disk(base.swap_serial(grant_uuid), 120)
        yield Swapping(guest, driver, prepared, attached, lmc, lender, dev)
    finally:
        print('guest console (tail):\n%s' % guest.console_text()[-4000:])
        guest.destroy()
        driver.close()
        conn.close()


class Resumer(threading.Thread):
    """memagg-compute's period, as far as a paused VM goes: resume_paused
    of ``lmc`` (its RemoteMemory) every ``interval`` s; records the domain
    states it saw. A VM pauses on its swap disk's error while the
    consumer's memagg-swapd restarts: libvirt 9.0 cannot ask QEMU to wait
    for it (reconnect-delay)."""

    def __init__(self, lmc, dom, interval=2):
        super().__init__(daemon=True)
        self.lmc = lmc
        self.dom = dom
        self.interval = interval
        self.states = set()
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(self.interval):
            self.states.add(self.dom.state()[0])
            self.lmc.resume_paused()

    def stop(self):
        self.stopping.set()
        self.join()


def swap_out(on):
    """Balloon the guest of ``on`` (a Swapping) to BALLOON_MB, have it
    fill DATA_MB and wait until SWAPPED_MB of it are on the memagg swap
    disk: the data's sum."""
    on.driver.set_balloon(on.guest.uuid, BALLOON_MB)
    checksum = on.guest.fill(DATA_MB, timeout=600)
    wait_swapped(on.guest, on.dev)
    return checksum


def wait_swapped(guest, dev):
    """Wait until the guest holds SWAPPED_MB on its memagg swap disk."""
    def swapped():
        beat = guest.heartbeat() or {'swaps': {}}
        return beat['swaps'].get(dev, {}).get('used_kb', 0) >= \
            SWAPPED_MB * 1024
    polling.wait_for(swapped, 600, interval=1,
                     message='%d MiB on the memagg swap disk' % SWAPPED_MB)


def check_swapping_in(guest):
    """Start the guest's check of its data and wait until it swaps pages
    in for it (256 more): the moment to break what serves them. The
    check's mark, for guest.wait_check."""
    pswpin = guest.heartbeat()['pswpin']
    mark = guest.start_check()
    polling.wait_for(lambda: guest.heartbeat()['pswpin'] > pswpin + 256,
                     120, interval=0.2,
                     message='the guest swapping in during its check')
    return mark
