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

"""memagg-manage trace export on SQLite, MariaDB and PostgreSQL (real
servers): samples stored through the db layer as reports store them,
exported, read back by memagg-sim's trace reader, and compared with what
the API serves for the same samples (the WSGI app, in process)."""
import datetime
import os

import pytest

from memagg.api import app as api_app
from memagg.cmd import manage
from memagg.cmd import trace_export
from memagg.conf import CONF
from memagg.db import reports as db_reports
from memagg.sim import trace as sim_trace
from memagg.tests.unit.api import conftest as api_conftest
from memagg.tests.unit.cmd import tools

pytestmark = pytest.mark.functional

T0 = datetime.datetime(2026, 11, 30, 23, 59, 50)
VM_A = '10000000-0000-4000-8000-00000000000a'
VM_B = '10000000-0000-4000-8000-00000000000b'
STEP = 10
UNTIL = T0 + datetime.timedelta(seconds=110)

# VM A on h-a: two samples in step 1 (the larger WSS is taken, the CPU
# averaged), step 3 holds only a warming estimate, steps 2 and 3 are
# filled from step 1 (max gap 2), then four missing steps cut it: steps 9
# and 10 are VM A~2.
A_SAMPLES = [(1, 400, 0.5, False), (12, 700, 1.0, False),
             (19, 600, 0.0, False), (31, 3000, 1.5, True),
             (42, 500, 0.25, False), (95, 800, 2.0, False),
             (101, 900, None, False)]
# VM B on h-b: one sample a step, and two outside the window.
B_SAMPLES = [(s, 100 + s, 0.1, False) for s in range(-5, 110, 10)] + [
    (115, 999, 0.1, False)]


def _ingest(context, host, vcpus, uuid, booked_mb, vm_vcpus, samples):
    db_reports.report_ingest(
        context, dict(name=host, memory_mb=8192, reserved_mb=512,
                      vcpus=vcpus),
        [dict(uuid=uuid, booked_mb=booked_mb, vcpus=vm_vcpus)],
        [dict(instance_uuid=uuid, wss_mb=wss, wss_maxavg_mb=None,
              current_mb=booked_mb, estimator='badis', cpu_util=cpu,
              warming=warming,
              sampled_at=T0 + datetime.timedelta(seconds=s))
         for s, wss, cpu, warming in samples],
        reported_at=T0 + datetime.timedelta(seconds=110))


@pytest.fixture
def history(admin_context, any_db):
    _ingest(admin_context, 'h-a', 8, VM_A, 4096, 2, A_SAMPLES)
    _ingest(admin_context, 'h-b', 4, VM_B, 2048, 1, B_SAMPLES)
    return any_db


def _served(conf, uuid):
    """{seconds from T0: wss_mb} of ``uuid``'s samples as the API serves
    them."""
    conf.config(auth_strategy='noauth', group='api')
    client = api_conftest.Client(api_app.create_app(CONF))
    response = client.get('/v1/instances/%s/wss?limit=1000' % uuid)
    assert response.status_code == 200, response.json
    served = {}
    for sample in response.json['wss_samples']:
        at = datetime.datetime.fromisoformat(
            sample['sampled_at'].replace('Z', '')).replace(tzinfo=None)
        served[int((at - T0).total_seconds())] = sample['wss_mb']
    return served


def test_the_export_replays_what_the_api_serves(conf, admin_context,
                                                history, tmp_path):
    summary = trace_export.export(admin_context, T0, UNTIL, STEP, 2,
                                  str(tmp_path))

    trace = sim_trace.read_trace(str(tmp_path / 'trace.csv'))
    hosts = sim_trace.read_hosts(str(tmp_path / 'hosts.csv'))
    assert (summary.rows, summary.vms, summary.steps, summary.hosts) == (
        5 + 2 + 11, 3, 11, 2)
    assert hosts.names == ['h-a', 'h-b']
    assert hosts.cpus.tolist() == [8, 4]
    assert hosts.memory_mb.tolist() == [7680, 7680]
    assert trace.vm_ids == [VM_A, VM_A + '~2', VM_B]
    assert (trace.step_s, trace.start_s) == (STEP, 0)
    assert trace.booked_mb.tolist() == [4096, 4096, 2048]
    assert trace.vcpus.tolist() == [2, 2, 1]
    assert trace.first.tolist() == [0, 9, 0]
    assert trace.last.tolist() == [4, 10, 10]
    assert [trace.host_names[i] for i in trace.initial_host] == [
        'h-a', 'h-a', 'h-b']

    a = _served(conf, VM_A)
    assert trace.wss_mb[:5, 0].tolist() == [
        a[1], max(a[12], a[19]), max(a[12], a[19]), max(a[12], a[19]), a[42]]
    assert trace.wss_mb[9:, 1].tolist() == [a[95], a[101]]
    assert trace.cpu[:5, 0].tolist() == [0.5, 0.5, 0.5, 0.5, 0.25]
    # A sample without CPU counts none.
    assert trace.cpu[9:, 1].tolist() == [2.0, 0.0]
    b = _served(conf, VM_B)
    assert trace.wss_mb[:, 2].tolist() == [b[s] for s in range(5, 110, 10)]
    assert set(b) - {s for s in range(5, 110, 10)} == {-5, 115}


def test_the_command_exports_and_an_empty_window_fails(conf, history,
                                                       tmp_path):
    config = tools.write_config(tmp_path, history)
    out = tmp_path / 'week'

    status, stdout, stderr = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config), 'trace',
        'export', '--since', T0.isoformat() + 'Z', '--until',
        UNTIL.isoformat(), '-o', str(out), '--max-gap', '2')
    empty = tools.run_main(
        manage.main, 'memagg-manage', '--config-file', str(config), 'trace',
        'export', '--since', '2026-01-01', '--until', '2026-01-08', '-o',
        str(tmp_path / 'empty'))

    assert (status, stderr) == (0, '')
    assert stdout == ('Wrote 18 rows of 3 VMs over 11 steps of 10 s to %s '
                      'and 2 hosts to %s\n' % (out / 'trace.csv',
                                               out / 'hosts.csv'))
    assert sorted(os.listdir(out)) == ['hosts.csv', 'trace.csv']
    assert empty[:2] == (1, '')
    assert empty[2] == ('no WSS sample (warming ones aside) was taken from '
                        '2026-01-01T00:00:00 to 2026-01-08T00:00:00: nothing '
                        'to export\n')
    assert not (tmp_path / 'empty' / 'trace.csv').exists()
