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

"""Try memagg first, end to end on a real QEMU guest (TCG) under libvirt:
memagg-compute's loop in observe mode leaves the guest's balloon where it
is while its reports, stored as memagg-scheduler stores them (SQLite),
carry the guest's WSS and CPU; memagg-manage trace export writes them as a
trace that memagg-sim reads and replays, and the replayed WSS is what the
API serves for the same samples."""
import datetime
import json

import pytest

from memagg.api import app as api_app
from memagg.cmd import sim as sim_cmd
from memagg.cmd import trace_export
from memagg.conf import CONF
from memagg.demo import guest as vm
from memagg.scheduler import manager as scheduler_manager
from memagg.sim import trace as sim_trace
from memagg.tests.functional.guest_fixtures import PeriodLoop
from memagg.tests import polling
from memagg.tests.unit.api import conftest as api_conftest

# The host lane (memagg/tests/lanes.py): a compute loop and a guest.
pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.host]

PERIOD = 3
MEMORY_MB = 256
PERIODS = 8
LATEST = {'OpenStack-API-Version': 'memory-aggregation latest'}


def _naive(text):
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')) \
        .astimezone(datetime.timezone.utc).replace(tzinfo=None)


def test_observe_export_and_replay_a_guest(virt, qemu_workdir, conf,
                                           sqlite_db, admin_context,
                                           tmp_path):
    conf.config(collect_interval=PERIOD, balloon_stats_period=2,
                mode='observe', group='compute')
    conf.config(estimator='badis', sampler_backend='auto', group='wss')
    conf.config(auth_strategy='noauth', group='api')
    guest = vm.Guest(virt, qemu_workdir, 'memagg-observe-export',
                     memory_mb=MEMORY_MB)
    loop = None
    try:
        guest.start()
        guest.set_hot(60)
        domain = virt.lookupByUUIDString(guest.uuid)
        before_kib = domain.info()[2]
        loop = PeriodLoop(PERIOD, 'memagg-observe-').start()
        polling.wait_for(
            lambda: len(loop.history(guest.uuid)) >= PERIODS or loop.errors,
            PERIODS * PERIOD * 4 + 60, interval=0.5,
            message='%d periods of the guest' % PERIODS)
        loop.stop()
        assert not loop.errors, loop.errors
        reports = list(loop.reports)
        loop = None

        # The balloon is where it was; nothing set a target.
        assert domain.info()[2] == before_kib
        rows = [i for r in reports for i in r.instances
                if i.uuid == guest.uuid]
        assert {(i.local_policy, i.target_mb) for i in rows} == {
            ('observe', None)}
        assert {i.current_mb for i in rows} == {before_kib // 1024}
        samples = [s for r in reports for s in r.samples
                   if s.instance_uuid == guest.uuid]
        assert len(samples) >= PERIODS
        assert all(s.cpu_util is not None and s.wss_mb > 0 for s in samples)

        # Stored as memagg-scheduler stores the reports it consumes.
        scheduler_manager.SchedulerManager(host='ctl').report_batch(
            admin_context, reports)
        client = api_conftest.Client(api_app.create_app(CONF))
        served = client.get('/v1/instances/%s/wss?limit=1000' % guest.uuid,
                            headers=LATEST).json['wss_samples']
        assert len(served) == len(samples)

        since = _naive(served[0]['sampled_at'])
        until = _naive(served[-1]['sampled_at']) + datetime.timedelta(
            seconds=PERIOD)
        out = tmp_path / 'trace'
        summary = trace_export.export(admin_context, since, until, PERIOD,
                                      PERIODS, str(out))
        trace = sim_trace.read_trace(str(out / 'trace.csv'))
        hosts = sim_trace.read_hosts(str(out / 'hosts.csv'))
        assert trace.vm_ids == [guest.uuid] and summary.vms == 1
        assert hosts.names == ['guest-test']
        assert trace.booked_mb.tolist() == [MEMORY_MB]

        # Each step's replayed WSS is the largest the API served in it
        # (warming ones aside); a step without one repeats the one before.
        by_step = {}
        for sample in served:
            k = int((_naive(sample['sampled_at']) - since).total_seconds()
                    // PERIOD)
            if not sample['warming']:
                by_step[k] = max(by_step.get(k, 0), sample['wss_mb'])
        first = min(by_step)
        expected, last = [], None
        for k in range(first, max(by_step) + 1):
            last = by_step.get(k, last)
            expected.append(last)
        replayed = trace.wss_mb[trace.first[0]:trace.last[0] + 1, 0]
        assert int(trace.start_s) == first * PERIOD
        assert replayed.tolist() == expected

        # memagg-sim replays those steps.
        status = sim_cmd.main([
            '--trace', str(out / 'trace.csv'), '--hosts-file',
            str(out / 'hosts.csv'), '--output-dir', str(tmp_path / 'sim'),
            '--no-plots', '--quiet'])
        assert status == 0
        replay = json.loads((tmp_path / 'sim' / 'summary.json').read_text())
        assert (replay['trace']['steps'], replay['trace']['vms']) == (
            len(expected), 1)
    finally:
        if loop is not None:
            loop.stop()
        guest.destroy()
