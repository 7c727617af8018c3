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

"""Where a grant's local copy lives, and the room left for new ones
(memagg/compute/remote_grants.py)."""
import os

from memagg.compute import remote_grants
from memagg.tests.unit.compute import remote_fixtures as helpers

VM = helpers.VM
GRANT = helpers.GRANT


def test_local_copy_path_names_the_instance():
    path = remote_grants.local_copy_path('/var/lib/memagg/swapd', VM, GRANT)
    assert path == '/var/lib/memagg/swapd/local/%s/%s.img' % (VM, GRANT)
    assert remote_grants.instance_of_local_copy(path) == VM
    assert remote_grants.instance_of_local_copy('/elsewhere/x.img') is None
    assert remote_grants.instance_of_local_copy(None) is None


class _Fs:
    """What os.statvfs says of a filesystem with ``free_mb`` free: the
    free space is the machine's to change (other tests write), the
    copies' sizes are real files here."""

    def __init__(self, free_mb):
        self.f_bavail = free_mb * 256
        self.f_frsize = 4096


def test_the_local_room_counts_what_each_copy_may_still_grow_by(
        tmp_path, monkeypatch):
    state = str(tmp_path)
    path = remote_grants.local_copy_path(state, VM, GRANT)
    (tmp_path / 'local' / VM).mkdir(parents=True)
    with open(path, 'wb') as copy:
        copy.truncate(64 * remote_grants.MIB)
        copy.write(b'\x01' * (16 * remote_grants.MIB))   # 16 MiB written
        copy.flush()
        os.fsync(copy.fileno())
    seen = []

    def statvfs(where):
        seen.append(where)
        return _Fs(10240)
    monkeypatch.setattr(remote_grants.os, 'statvfs', statvfs)
    grants = [remote_grants.Grant(uuid=GRANT, instance_uuid=VM, size_mb=64),
              # Noted from allocate_remote's answer, not attached yet.
              remote_grants.Grant(uuid=helpers.GRANT2, instance_uuid=VM,
                                  remote_mb=128)]

    room = remote_grants.local_room_mb(state, 1024, grants)

    assert seen == [str(tmp_path / 'local')]
    # 10240 free, 1024 kept, 48 MiB the first copy may still take, 128
    # the second.
    assert room == 10240 - 1024 - 48 - 128
    assert remote_grants.local_room_mb(state, 20000, grants) == 0


def test_no_local_room_is_known_without_the_copies_directory(tmp_path):
    assert remote_grants.local_room_mb(str(tmp_path), 0, []) is None
