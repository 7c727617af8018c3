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

"""The guest image (memagg/demo/image/build.sh) is built once: a second
build finds it in the cache and leaves it as it is, as memagg-aio --demo's
second run does."""
import os
import shutil
import subprocess

import pytest

from memagg.demo import guest

pytestmark = pytest.mark.functional


def _build(cache):
    out = subprocess.run([os.path.join(guest.IMAGE, 'build.sh'), str(cache)],
                         check=True, capture_output=True, text=True,
                         timeout=600)
    return out.stdout.strip().splitlines()[-1]


def _files(directory):
    """(name, inode, modification time) of each file of ``directory``."""
    return sorted((entry.name, entry.stat().st_ino, entry.stat().st_mtime_ns)
                  for entry in os.scandir(directory))


def test_a_second_build_is_answered_from_the_cache(tmp_path):
    # A private cache holding only the kernel this host's cache already
    # downloaded (no network here): the initramfs is built in it once.
    image = os.path.dirname(guest.build()[0])
    version = os.path.basename(image).rsplit('-', 1)[0]
    shutil.copytree(os.path.join(guest.CACHE, 'kernel-' + version),
                    tmp_path / ('kernel-' + version))
    built = _build(tmp_path)
    assert os.path.dirname(built) == str(tmp_path)
    # The same sources give the same image as the shared cache's.
    assert os.path.basename(built) == os.path.basename(image)
    files = _files(built)
    assert [name for name, _ino, _mtime in files] == [
        'initrd.img', 'vmlinuz']
    assert _build(tmp_path) == built
    assert _files(built) == files
    # Nothing half-built is left beside it.
    assert sorted(os.listdir(tmp_path)) == sorted(
        ['.lock', os.path.basename(built), 'kernel-' + version])
