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

"""What memagg-aio --demo checks before it starts anything: each missing
piece refused in one line that says how to get it. (The demo itself, on
real guests: functional/test_aio.py and functional/test_demo_cloud.py.)"""
import subprocess

import pytest

from memagg.common import exceptions
from memagg.common import retry
from memagg.demo import cloud
from memagg.demo import guest
from memagg.scheduler import rpcapi as scheduler_rpcapi


@pytest.fixture
def roomy(monkeypatch):
    """A host with memory and QEMU to spare; the image as if built."""
    monkeypatch.setattr(cloud, 'available_mb', lambda: 64 * 1024)
    monkeypatch.setattr(cloud.shutil, 'which', lambda name: '/usr/bin/' + name)
    monkeypatch.setattr(guest, 'build', lambda: ('vmlinuz', 'initrd.img'))


def test_a_host_that_can_run_it_gets_the_image(roomy):
    assert cloud.check_host(True) == ('vmlinuz', 'initrd.img')


def test_no_libvirtd(roomy):
    with pytest.raises(cloud.Unavailable) as exc:
        cloud.check_host(False)
    assert str(exc.value) == (
        '--demo needs libvirtd at qemu:///system and none answers: run '
        'tools/setup.sh (it installs and starts libvirtd), or start it with '
        '"libvirtd -d"')


def test_no_qemu(roomy, monkeypatch):
    monkeypatch.setattr(cloud.shutil, 'which', lambda name: None)
    with pytest.raises(cloud.Unavailable) as exc:
        cloud.check_host(True)
    assert 'qemu-system-x86_64' in str(exc.value)
    assert 'apt-get install qemu-system-x86' in str(exc.value)


def test_not_enough_memory(roomy, monkeypatch):
    # The guests, what else runs beside them, and the donor's lent memory.
    wanted = (sum(w.memory_mb for w in cloud.WORKLOADS) + cloud.HEADROOM_MB
              + cloud.DONOR_MB)
    monkeypatch.setattr(cloud, 'available_mb', lambda: wanted - 1)
    with pytest.raises(cloud.Unavailable) as exc:
        cloud.check_host(True)
    assert str(exc.value) == (
        '--demo needs %d MiB of available memory for its guests and has %d: '
        'free some, or use a larger machine' % (wanted, wanted - 1))


def test_an_image_that_cannot_be_built_says_why(roomy, monkeypatch):
    def fails():
        raise subprocess.CalledProcessError(
            1, ['build.sh'], stderr='downloading\nbuild.sh: ERROR: '
            '/bin/busybox missing: apt-get install busybox-static\n')
    monkeypatch.setattr(guest, 'build', fails)
    with pytest.raises(cloud.Unavailable) as exc:
        cloud.check_host(True)
    assert str(exc.value) == (
        'the guest image could not be built: build.sh: ERROR: /bin/busybox '
        'missing: apt-get install busybox-static')


def test_the_real_memory_reading():
    assert cloud.available_mb() > 0


def test_its_options_are_defaults_a_config_file_still_sets(conf):
    # Through the fixture, which puts the defaults back afterwards.
    cloud.set_defaults(conf)
    conf.config(collect_interval=7, group='compute')

    assert conf.conf.compute.collect_interval == 7
    assert conf.conf.compute.domain_name_regex == cloud.PREFIX
    assert conf.conf.wss.min_margin_mb == 0
    assert conf.conf.host_reclaim.controller == 'senpai'


class _Guest:
    """What _use_remote drives of a demo guest."""

    uuid = '11111111-2222-3333-4444-555555555555'

    def __init__(self):
        self.calls = []

    def wait_swap_disk(self, serial, timeout):
        self.calls.append(('swap disk', serial))
        return 'vdb'

    def fill(self, mb, timeout):
        self.calls.append(('fill', mb))

    def heartbeat(self):
        return {'swaps': {'vdb': {'used_kb': 40 * 1024}}}


REMOTE = next(w for w in cloud.WORKLOADS if w.grant_mb)


def test_the_guest_that_outgrows_its_ram_swaps_to_its_grant(monkeypatch):
    monkeypatch.setattr(cloud, 'GRANT_RETRIES', retry.Policy(
        attempts=None, interval=0.01, within=cloud.GRANT_TIMEOUT))
    asked = []

    def grant(instance_uuid, size_mb):
        asked.append((instance_uuid, size_mb))
        if len(asked) < 3:
            raise exceptions.NotFound(resource='Instance', id=instance_uuid)
        return {'uuid': 'abcdef12-0000-0000-0000-000000000000',
                'granted_mb': size_mb,
                'slabs': [{'donor_host': 'h-donor'}] * 2}
    said = []
    demo = cloud.DemoCloud(None, say=said.append, grant=grant)
    guest_ = _Guest()
    demo._use_remote(REMOTE, guest_)

    # Asked again while memagg-compute had not reported the guest.
    assert asked == [(guest_.uuid, REMOTE.grant_mb)] * 3
    # Its swap on the grant's disk first, then more data than its RAM.
    assert guest_.calls == [('swap disk', 'memagg-swap-abcdef12'),
                            ('fill', REMOTE.fill_mb)]
    assert REMOTE.fill_mb + REMOTE.hot_mb[0] > REMOTE.memory_mb
    assert said == [
        'demo: memagg-demo-remote swaps to remote memory: grant '
        'abcdef12-0000-0000-0000-000000000000 of 128 MiB from h-donor on '
        'its vdb',
        'demo: memagg-demo-remote wrote 240 MiB, more than its RAM holds; '
        '40 MiB of its memory are in its remote swap']


def test_no_remote_memory_is_said_and_the_demo_goes_on(monkeypatch):
    def grant(instance_uuid, size_mb):
        raise scheduler_rpcapi.RemoteMemoryUnavailable(
            'no compute host other than h reported lendable memory')
    said = []
    demo = cloud.DemoCloud(None, say=said.append, grant=grant)
    monkeypatch.setattr(cloud.guest_mod, 'Guest', lambda *a, **k: _Booting())
    demo._boot(REMOTE)

    assert said[-1] == (
        'demo: memagg-demo-remote got no remote memory in use: no compute '
        'host other than h reported lendable memory')
    assert REMOTE.name in demo.guests


class _Booting(_Guest):
    def start(self):
        pass

    def set_hot(self, mb):
        pass
