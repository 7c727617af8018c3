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

"""memagg-sim import alibaba2018 on cluster-trace-v2018-shaped files the
test writes: the mapping, merging 10 s samples into steps, the drops and
their counts, the window, --max-vms and --hosts-out."""
from memagg.tests.unit.sim import import_fixtures as fx
from memagg.tests.unit.sim.import_fixtures import rows
from memagg.tests.unit.sim.import_fixtures import run


def test_a_container_maps_to_the_expected_cells(tmp_path, capsys):
    src = fx.write_alibaba(
        tmp_path / 'src',
        [fx.alibaba_meta_row('c_9', cpu_request=400, mem_size=3.125),
         fx.alibaba_meta_row('c_9', time=50, cpu_request=400,
                             mem_size=6.25)],
        [fx.alibaba_usage_row('c_9', 300 + 10 * i, cpu=20 + 10 * i,
                              mem=10 * (i + 1), machine='m_4')
         for i in range(3)])
    out = tmp_path / 'trace.csv'
    status, stdout, err = run(capsys, 'alibaba2018', str(src), '-o',
                              str(out), '--machine-memory-mb', '65536')
    assert (status, err) == (0, '')
    # booked: the largest mem_size, 6.25 % of 65536 MiB; cpu: the mean of
    # 20/30/40 % of 4 cores; wss: the largest, 30 % of 4096 MiB.
    assert rows(out) == [{'time': '300.0', 'vm': 'c_9',
                          'booked_mb': '4096.0', 'vcpus': '4',
                          'cpu': '1.2', 'wss_mb': '1228.8',
                          'host': 'm_4'}]
    assert 'samples merged into a step with others: 2' in stdout
    assert 'wrote %s: 1 rows, 1 VMs, 1 steps of 300 s' % out in stdout


def test_dropped_rows_are_counted_per_reason(tmp_path, capsys):
    usage = [fx.alibaba_usage_row('c_1', 300 * i) for i in range(1, 5)]
    usage += [fx.alibaba_usage_row('c_1', 0),
              fx.alibaba_usage_row('c_1', 1500, cpu=-1),
              fx.alibaba_usage_row('c_1', 1500, mem=101),
              fx.alibaba_usage_row('c_1', 1500, cpu=''),
              fx.alibaba_usage_row('c_2', 600)]
    src = fx.write_alibaba(tmp_path / 'src', [
        fx.alibaba_meta_row('c_1'), fx.alibaba_meta_row('c_3', mem_size=-1)],
        usage)
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'alibaba2018', str(src), '-o', str(out))
    assert status == 0
    for line in ('dropped 1 rows: time_stamp 0 (outside the trace\'s 8 '
                 'days)',
                 'dropped 2 rows: cpu or memory percentage marked invalid '
                 '(-1 or 101)',
                 'dropped 1 rows: cpu or memory percentage empty',
                 'dropped 1 rows: container not in container_meta',
                 'container_meta rows with an invalid mem_size (-1 or '
                 '101): 1',
                 'wrote %s: 4 rows, 1 VMs, 4 steps of 300 s' % out):
        assert line in stdout.splitlines()


def test_window_max_vms_and_hosts(tmp_path, capsys):
    meta = [fx.alibaba_meta_row('c_%d' % i, machine='m_%d' % (i % 2))
            for i in range(4)]
    usage = [fx.alibaba_usage_row('c_%d' % i, t, machine='m_%d' % (i % 2))
             for t in range(60, 7200, 60) for i in range(4)]
    src = fx.write_alibaba(tmp_path / 'src', meta, usage)
    out, hosts = tmp_path / 'trace.csv', tmp_path / 'hosts.csv'
    status, stdout, _ = run(
        capsys, 'alibaba2018', str(src), '-o', str(out), '--start', '3600',
        '--days', str(1800 / 86400), '--max-vms', '3', '--hosts-out',
        str(hosts), '--chunk-mb', '0.001')
    assert status == 0
    got = rows(out)
    assert sorted({r['vm'] for r in got}) == ['c_0', 'c_1', 'c_2']
    assert sorted({float(r['time']) for r in got}) == [
        300.0 * k for k in range(6)]
    # 119 times x 4 containers: 30 times in the window, 3 containers kept.
    assert 'dropped %d rows: outside --start/--days' % (89 * 4) in stdout
    assert 'dropped 30 rows: beyond --max-vms' in stdout
    assert rows(hosts) == [
        {'host': 'm_0', 'cpus': '96.0', 'memory_mb': '131072.0'},
        {'host': 'm_1', 'cpus': '96.0', 'memory_mb': '131072.0'}]


def test_an_option_of_another_format_is_refused(tmp_path, capsys):
    src = fx.write_alibaba(tmp_path / 'src', [fx.alibaba_meta_row('c_1')],
                           [fx.alibaba_usage_row('c_1', 300)])
    status, _, err = run(capsys, 'alibaba2018', str(src), '-o',
                         str(tmp_path / 'trace.csv'), '--cpu-scale', '8')
    assert status == 2
    assert err == ('memagg-sim import: error: argument --cpu-scale: only '
                   'for google2019\n')
    assert not (tmp_path / 'trace.csv').exists()
