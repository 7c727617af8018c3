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

"""Fixtures every functional test module shares, defined once here so the
session starts one of each: a RabbitMQ virtual host, a real Keystone and a
running memagg behind it (``deployment``), a real Placement
(``placement_server``); ``virt``, a module's connection to the test
libvirtd; and ``qemu_workdir``, a test's directory for what QEMU opens."""
import os
import shutil
import tempfile

import libvirt
import pytest

from memagg.tests.functional.deployment import deployment  # noqa: F401
from memagg.tests.functional import guest_fixtures
from memagg.tests.functional.keystone import keystone  # noqa: F401
from memagg.tests.functional.placement_server import placement_server  # noqa: F401,E501
from memagg.tests.functional.service_procs import rabbit_url_fixture  # noqa: F401,E501


@pytest.fixture(scope='module')
def virt():
    """A connection to the libvirtd the guest tests run their guests on
    (started if it is not running)."""
    conn = libvirt.open(guest_fixtures.ensure_libvirtd())
    yield conn
    conn.close()


@pytest.fixture
def qemu_workdir():
    """A directory QEMU's unprivileged user can walk into (pytest's
    tmp_path is mode 0700), for guests' files and sockets; removed
    afterwards."""
    path = tempfile.mkdtemp(prefix='memagg-guests-', dir='/var/tmp')
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)
