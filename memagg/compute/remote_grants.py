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

"""The grants with an export on this host, as memagg-compute remembers
them (the consumer side of remote memory): which VM each is for, what it
holds on donors, and where its local copy lives
(<state_dir>/local/<instance>/<grant>.img), the path memagg-compute finds
the grant's VM again from after a restart; and the check of the uuids
they and their VMs go by.
"""
import dataclasses
import os
import re

from memagg.common import exceptions

# Grants count MiB, memagg-swapd bytes.
MIB = 1024 * 1024

_UUID = re.compile(r'^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$')


@dataclasses.dataclass
class Grant:
    """A grant with an export on this host (the consumer side).
    ``instance_uuid`` is None when it cannot be told; ``remote_mb``: MiB of
    its slabs still on donors (0 when not known), ``size_mb`` of all its
    slabs, in the local tier too (what its VM's cap counts; 0 when not
    known), ``slab_size_mb`` their size."""

    uuid: str
    instance_uuid: str | None
    socket: str | None = None
    serial: str | None = None
    target_dev: str | None = None
    remote_mb: int = 0
    size_mb: int = 0
    slab_size_mb: int = 0


def local_copy_path(state_dir, instance_uuid, grant_uuid):
    """Where grant ``grant_uuid``'s durability copy of VM
    ``instance_uuid`` lives."""
    return os.path.join(state_dir, 'local', instance_uuid,
                        grant_uuid + '.img')


def local_room_mb(state_dir, reserve_mb, grants):
    """MiB the filesystem of the local copies under ``state_dir`` can
    still take for new grants: its free space (for an unprivileged user)
    less ``reserve_mb`` and less what the copies of ``grants`` (Grant,
    with ``size_mb``) may still grow by (a copy is a sparse file that
    grows as its pages are first written); at least 0. None when the
    filesystem cannot be read."""
    try:
        fs = os.statvfs(os.path.join(state_dir, 'local'))
    except OSError:
        return None
    room = fs.f_bavail * fs.f_frsize // MIB - reserve_mb
    for grant in grants:
        try:
            held = os.stat(local_copy_path(state_dir, grant.instance_uuid,
                                           grant.uuid)).st_blocks * 512
        except (OSError, TypeError):
            held = 0    # not written yet, or its VM not known
        # A grant noted from allocate_remote's answer knows its size
        # only once attached.
        room -= max(0, (grant.size_mb or grant.remote_mb) - held // MIB)
    return max(0, room)


def instance_of_local_copy(path):
    """The instance uuid in a path made by local_copy_path, or None."""
    parts = os.path.normpath(path or '').split(os.sep)
    if len(parts) >= 3 and parts[-3] == 'local' and _UUID.match(parts[-2]):
        return parts[-2]
    return None


def check_uuid(field, value):
    """InvalidParameter naming ``field`` unless ``value`` is a uuid."""
    if not isinstance(value, str) or not _UUID.match(value):
        raise exceptions.InvalidParameter(
            field=field, reason='%r is not a uuid' % (value,))
