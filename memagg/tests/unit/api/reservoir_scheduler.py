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

"""A real memagg-scheduler manager on oslo.messaging's fake driver for the
API's tests of grants and reclaim, with memagg-compute stood in for at its
RPC client (memagg.tests.unit.scheduler.compute_double)."""
import pytest

from memagg.drivers.reservoir import donors
from memagg.scheduler import manager
from memagg.scheduler import reservoir
from memagg import service
from memagg.tests.unit.scheduler import compute_double


class _NoExecutor:
    """Plans are not executed in these tests."""

    def resume(self, ctxt, execute=True):
        pass

    def execute(self, ctxt, audit_uuid):
        pass


@pytest.fixture
def scheduler(conf, reservoir_opts, fake_rpc):
    """The scheduler serving RPC; yields its ComputeDouble."""
    compute = compute_double.ComputeDouble()
    gmc = reservoir.Reservoir(conf.conf, compute_api=compute,
                              selection=donors.LargestFirst())
    svc = service.Service('memagg-scheduler', conf.conf.scheduler.topic,
                          manager.SchedulerManager(
                              host='ctl', executor=_NoExecutor(),
                              reservoir=gmc))
    svc.start()
    assert svc.connected.wait(10)
    yield compute
    svc.stop()
