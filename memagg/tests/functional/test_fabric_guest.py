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

"""A real guest swapping to a donor over the rdma transport (issue 37):
libfabric's one-sided reads and writes, on its tcp provider and, the two
memagg-swapds sharing this host, its shm provider -- the code an RDMA
cloud runs on its verbs provider.

A TCG guest (memagg/demo/image) gets a grant of four 64 MiB slabs lent by
a donor memagg-swapd listening on rdma://, attached by memagg-compute's
own code (RemoteMemory.attach_grant: a sealed export, as by default); the
guest makes it its swap, is ballooned below its data and re-reads it, so
its pages go to the donor's registered memory and come back. The data's
sum matches; then the donor's memagg-swapd is SIGKILLed while the guest
reads its data back, and the sum still matches: the consumer serves the
pages from its local copy.

Fakes: memagg-scheduler (FakeScheduler of the unit tests: nothing asks it
anything); the two hosts are two memagg-swapd processes on this machine.
"""
import libvirt
import pytest

from memagg.tests.functional import swapping_guest
from memagg.tests.functional import two_hosts
from memagg.tests import polling

# The host lane (memagg/tests/lanes.py): guests under this machine's
# libvirtd, which test_guest_libvirtd_restart stops for a while.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

GRANT = '5f0c3d1e-7a2b-4c8d-9e6f-1a2b3c4d5e6f'
MIB = swapping_guest.MIB
#: What PING says of each provider's endpoint (fi_info's names).
PROVIDERS = {'tcp': 'tcp;ofi_rxm', 'shm': 'shm'}


@pytest.fixture(params=sorted(PROVIDERS))
def daemons(request):
    """A donor memagg-swapd lending SLABS slabs over the rdma transport on
    the provider of the test's parameter, and the consumer's, whose export
    sockets QEMU's user may open."""
    with two_hosts.donor_and_consumer(
            'memagg-fabric-', swapping_guest.SLAB_MB * swapping_guest.SLABS,
            fabric_provider=request.param,
            socket_user=two_hosts.QEMU_USER) as pair:
        yield request.param, pair


@pytest.mark.timeout(1500)
def test_a_guest_swaps_over_the_fabric_and_survives_the_donors_death(
        conf, daemons, qemu_workdir):
    provider, (donor, consumer) = daemons
    ping = donor.client().ping()
    assert (ping['transport'], ping['fabric']) == ('rdma',
                                                   PROVIDERS[provider]), ping
    with swapping_guest.guest_on(conf, donor, consumer, qemu_workdir,
                                 'memagg-fabric-%s' % provider,
                                 GRANT) as on:
        guest = on.guest
        assert on.prepared['endpoint'] == donor.endpoint
        assert donor.endpoint.startswith('rdma://')
        client = consumer.client()
        assert client.export_describe(GRANT)['seal'] == '1'
        checksum = swapping_guest.swap_out(on)
        assert guest.check(timeout=600) == checksum
        before = client.export_stats(GRANT)
        # Every page went to the donor's memory and came back from it.
        assert before['write_bytes'] >= swapping_guest.SWAPPED_MB * MIB, before
        assert before['reads'] > 0, before
        for key in ('remote_errors', 'degraded_slabs', 'local_reads',
                    'auth_failures'):
            assert before[key] == 0, (key, before)
        assert donor.client().donor_stats()['used'] == (
            swapping_guest.SLAB_MB * swapping_guest.SLABS * MIB)

        # The donor dies while the guest reads its data back.
        mark = swapping_guest.check_swapping_in(guest)
        assert donor.kill() == -9
        assert guest.wait_check(mark, 600) == checksum
        beats = guest.heartbeats()
        polling.wait_for(lambda: guest.heartbeats() > beats + 2, 60,
                         interval=0.5, message='heartbeats after the kill')
        assert guest.dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        after = client.export_stats(GRANT)
        # The kill was felt, and served from the local copy.
        assert (after['degraded_slabs'] > 0
                or after['remote_errors'] > 0), after
        assert after['local_reads'] > 0, after
        # Back, empty (it held the slabs in memory), to stop cleanly.
        donor.start()
        print('%s provider: %d MiB swapped through memagg, sum %s kept '
              'across the donor\'s death; stats before %s, after %s' % (
                  provider, before['write_bytes'] // MIB, checksum, before,
                  after))
