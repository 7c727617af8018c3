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

"""pytest fixtures for RPC: in-process over oslo.messaging's fake driver,
or over the rabbit driver towards a port nothing listens on."""
import socket

from kombu.utils import functional as kombu_functional
import pytest

from memagg.common import rpc


@pytest.fixture
def fake_rpc(conf):
    """Point memagg.common.rpc at a fresh ``fake://`` transport."""
    rpc.cleanup()
    transport = rpc.init(url='fake://')
    yield transport
    rpc.cleanup()


@pytest.fixture
def unreachable_bus(conf, monkeypatch):
    """Point ``transport_url`` at a port this fixture holds bound but does
    not listen on, so every connection is refused; the rabbit driver's
    waits between its attempts (kombu's) are recorded, not slept: the list
    yielded holds them, and a test can count the attempts its retry bound
    allowed without waiting seconds for them."""
    waits = []
    monkeypatch.setattr(kombu_functional, 'sleep', waits.append)
    with socket.socket() as held:
        held.bind(('127.0.0.1', 0))
        conf.config(transport_url='rabbit://guest:guest@127.0.0.1:%d/'
                    % held.getsockname()[1])
        rpc.cleanup()
        try:
            yield waits
        finally:
            rpc.cleanup()
