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

"""memagg-sim import google2019 on ClusterData2019-shaped JSON lines the
test writes: the mapping with and without instance_events, alloc sets,
the window and gzipped input."""
import gzip

from memagg.tests.unit.sim import import_fixtures as fx
from memagg.tests.unit.sim.import_fixtures import rows
from memagg.tests.unit.sim.import_fixtures import run


def test_usage_and_events_map_to_the_expected_cells(tmp_path, capsys):
    src = fx.write_google(
        tmp_path / 'src',
        [fx.google_usage_row(41, 2, 600, cpus=0.05, memory=0.02,
                             peak=0.03, machine=17),
         fx.google_usage_row(41, 2, 900, cpus=0.1, memory=0.025)],
        [fx.google_event_row(41, 2, cpus=0.1, memory=0.0625),
         fx.google_event_row(41, 2, cpus=0.125, memory=0.05, time_s=700)])
    out = tmp_path / 'trace.csv'
    status, stdout, err = run(capsys, 'google2019', str(src), '-o', str(out),
                              '--cpu-scale', '64', '--memory-scale-mb',
                              '262144')
    assert (status, err) == (0, '')
    # booked: the largest request, 0.0625 x 262144 MiB; vcpus: 0.125 x 64;
    # cpu: 0.05 x 64; wss: the peak, 0.03 x 262144.
    assert rows(out) == [
        {'time': '600.0', 'vm': '41-2', 'booked_mb': '16384.0',
         'vcpus': '8', 'cpu': '3.2', 'wss_mb': '7864.32', 'host': '17'},
        {'time': '900.0', 'vm': '41-2', 'booked_mb': '16384.0',
         'vcpus': '8', 'cpu': '6.4', 'wss_mb': '6553.6', 'host': ''}]
    assert 'wrote %s: 2 rows, 1 VMs, 2 steps of 300 s' % out in stdout


def test_without_events_assigned_memory_and_peak_cpu_size_it(tmp_path,
                                                             capsys):
    src = fx.write_google(
        tmp_path / 'src',
        [fx.google_usage_row(5, 0, 600 + 300 * i, cpus=0.01 * (i + 1),
                             assigned=0.125) for i in range(3)]
        + [fx.google_usage_row(6, 0, 600, collection_type=1)],
        [fx.google_event_row(5, 0)])
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'google2019', str(src), '-o', str(out),
                            '--no-events')
    assert status == 0
    got = rows(out)
    # 0.125 x 131072 MiB; peak cpu 0.03 x 32 = 0.96 cores: 1 vCPU.
    assert {(r['booked_mb'], r['vcpus']) for r in got} == {('16384.0', '1')}
    assert ('dropped 1 rows: alloc set instance (its tasks report their '
            'own usage)') in stdout
    assert 'VMs with vcpus from their peak cpu (no request): 1' in stdout


def test_window_and_gzipped_files(tmp_path, capsys):
    src = tmp_path / 'src'
    src.mkdir()
    with gzip.open(src / 'instance_usage-000000000001.json.gz', 'wt') as f:
        f.write('\n'.join(fx.google_usage_row(1, i, 600 + 300 * t)
                          for t in range(20) for i in range(2)) + '\n')
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'google2019', str(src), '-o', str(out),
                            '--start', '1200', '--days', str(900 / 86400))
    assert status == 0
    assert sorted({(r['vm'], r['time']) for r in rows(out)}) == [
        (vm, t) for vm in ('1-0', '1-1') for t in ('0.0', '300.0', '600.0')]
    assert 'dropped 34 rows: outside --start/--days' in stdout
