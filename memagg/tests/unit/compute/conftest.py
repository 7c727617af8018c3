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

"""Fixtures of these tests: RemoteMemory with its boundaries replaced
(remote_fixtures.py) for the test_remote* modules."""
import pytest

from memagg.compute import remote
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401
from memagg.tests.rpc_fixtures import unreachable_bus  # noqa: F401
from memagg.tests.unit.compute import remote_fixtures as helpers


@pytest.fixture
def clock():
    return [1000.0]


@pytest.fixture
def lmc(conf, tmp_path, clock):
    conf.config(state_dir=str(tmp_path / 'state'),
                export_dir=str(tmp_path / 'exports'), retry_interval=60,
                scheduler_timeout=33, group='swapd')
    conf.config(donor_reserve_mb=1024, max_remote_ratio=0.5,
                group='reservoir')
    return remote.RemoteMemory(helpers.Driver(), 'node-a', conf.conf,
                               helpers.FakeScheduler(),
                               client=helpers.FakeSwapd(),
                               clock=lambda: clock[0])


@pytest.fixture
def tlp_lmc(conf, lmc, clock):
    """A RemoteMemory like lmc's, with [reservoir] remote_budget = tlp."""
    conf.config(remote_budget='tlp', group='reservoir')
    return remote.RemoteMemory(helpers.Driver(), 'node-a', conf.conf,
                               helpers.FakeScheduler(),
                               client=helpers.FakeSwapd(),
                               clock=lambda: clock[0])
