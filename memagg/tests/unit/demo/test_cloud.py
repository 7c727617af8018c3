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

from memagg.demo import cloud
from memagg.demo import guest


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
    wanted = sum(w.memory_mb for w in cloud.WORKLOADS) + cloud.HEADROOM_MB
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
