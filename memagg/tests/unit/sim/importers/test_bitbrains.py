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

"""memagg-sim import bitbrains on GWA-T-12-shaped files the test writes:
the mapping cell by cell, the clock, months, gaps, drops, the window and
--max-vms."""

from memagg.tests.unit.sim import import_fixtures as fx
from memagg.tests.unit.sim.import_fixtures import rows
from memagg.tests.unit.sim.import_fixtures import run

T0 = fx.T0


def test_a_row_maps_to_the_expected_cells(tmp_path, capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {'7.csv': [
        fx.bitbrains_row(T0, cores=4, capacity=10400.0, usage=3900.0,
                         memory_kb=8388608.0, used_kb=3145728.0),
        fx.bitbrains_row(T0 + 300, cores=4, capacity=10400.0, usage=0.0,
                         memory_kb=8388608.0, used_kb=524288.0)]})
    out = tmp_path / 'trace.csv'
    status, stdout, err = run(capsys, 'bitbrains', str(src), '-o', str(out),
                              '--start', str(T0))
    assert (status, err) == (0, '')
    got = rows(out)
    # 3900 MHz over 2600 MHz a core = 1.5 cores; KB / 1024 = MiB.
    assert got[0] == {'time': '0.0', 'vm': '7', 'booked_mb': '8192.0',
                      'vcpus': '4', 'cpu': '1.5', 'wss_mb': '3072.0',
                      'host': ''}
    assert (got[1]['time'], got[1]['cpu'], got[1]['wss_mb']) == (
        '300.0', '0.0', '512.0')
    assert 'wrote %s: 2 rows, 1 VMs, 2 steps of 300 s' % out in stdout


def test_timestamps_in_seconds_or_milliseconds_give_one_grid(tmp_path,
                                                             capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {
        '1.csv': [fx.bitbrains_row(T0 + 300 * i) for i in range(3)],
        '2.csv': [fx.bitbrains_row((T0 + 300 * i) * 1000)
                  for i in range(3)]})
    out = tmp_path / 'trace.csv'
    assert run(capsys, 'bitbrains', str(src), '-o', str(out))[0] == 0
    # Without --start, times count from the earliest sample.
    times = {(r['vm'], r['time']) for r in rows(out)}
    assert times == {(vm, repr(300.0 * i)) for vm in '12' for i in range(3)}


def test_without_start_the_window_opens_at_the_first_sample(tmp_path,
                                                            capsys):
    # VM 2 starts an hour after VM 1; Unix times, as the archive's files.
    src = fx.write_bitbrains(tmp_path / 'src', {
        '1.csv': [fx.bitbrains_row(T0 + 3600 * h) for h in range(48)],
        '2.csv': [fx.bitbrains_row(T0 + 3600 * h) for h in range(1, 48)]})
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'bitbrains', str(src), '-o', str(out),
                            '--step', '3600', '--days', '1')
    assert status == 0
    got = rows(out)
    assert sorted({float(r['time']) for r in got if r['vm'] == '1'}) == [
        3600.0 * h for h in range(24)]
    assert sorted({float(r['time']) for r in got if r['vm'] == '2'}) == [
        3600.0 * h for h in range(1, 24)]
    assert 'dropped 48 rows: outside --start/--days' in stdout


def test_rnd_months_are_one_vm_unless_separated(tmp_path, capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {
        '2013-7/3.csv': [fx.bitbrains_row(T0 + 300 * i) for i in range(2)],
        '2013-8/3.csv': [fx.bitbrains_row(T0 + 600 + 300 * i)
                         for i in range(2)]})
    out = tmp_path / 'trace.csv'
    assert run(capsys, 'bitbrains', str(src), '-o', str(out),
               '--start', str(T0))[0] == 0
    assert [(r['vm'], r['time']) for r in rows(out)] == [
        ('3', '0.0'), ('3', '300.0'), ('3', '600.0'), ('3', '900.0')]
    assert run(capsys, 'bitbrains', str(src), '-o', str(out),
               '--start', str(T0), '--separate-months')[0] == 0
    assert sorted({r['vm'] for r in rows(out)}) == ['2013-7/3', '2013-8/3']


def test_gaps_are_filled_up_to_max_gap_and_split_beyond(tmp_path, capsys):
    times = [0, 300, 1200, 1500, 1500 + 301 * 10]
    src = fx.write_bitbrains(tmp_path / 'src', {'1.csv': [
        fx.bitbrains_row(T0 + t, usage=500.0 * (i + 1))
        for i, t in enumerate(times)]})
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'bitbrains', str(src), '-o', str(out),
                            '--start', str(T0), '--max-gap', '900')
    assert status == 0
    got = [(r['vm'], r['time'], r['cpu']) for r in rows(out)]
    # 600 and 900 hold the 300 step's 1000 MHz (0.4 cores); 4510 s is
    # ten steps after 1500: a new VM.
    assert got == [('1', '0.0', '0.2'), ('1', '300.0', '0.4'),
                   ('1', '600.0', '0.4'), ('1', '900.0', '0.4'),
                   ('1', '1200.0', '0.6'), ('1', '1500.0', '0.8'),
                   ('1#2', '4500.0', '1.0')]
    assert 'steps filled (gap up to --max-gap): 2' in stdout
    assert 'VMs split at a gap longer than --max-gap: 1' in stdout
    assert 'wrote %s: 7 rows, 2 VMs, 16 steps of 300 s' % out in stdout


def test_rows_without_memory_or_cpu_are_dropped_and_counted(tmp_path,
                                                            capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {'1.csv': [
        fx.bitbrains_row(T0), fx.bitbrains_row(T0 + 300, memory_kb=0),
        fx.bitbrains_row(T0 + 600, cores=0),
        fx.bitbrains_row(T0 + 900, memory_kb=0)]})
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(capsys, 'bitbrains', str(src), '-o', str(out))
    assert status == 0
    assert 'dropped 2 rows: no memory provisioned' in stdout
    assert ('dropped 1 rows: no CPU provisioned (CPU cores or capacity 0)'
            in stdout)
    assert len(rows(out)) == 1


def test_the_window_and_max_vms(tmp_path, capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {
        '%d.csv' % vm: [fx.bitbrains_row(T0 + 3600 * h) for h in range(72)]
        for vm in (1, 2, 10)})
    out = tmp_path / 'trace.csv'
    status, stdout, _ = run(
        capsys, 'bitbrains', str(src), '-o', str(out), '--step', '3600',
        '--start', '2013-07-02', '--days', '1', '--max-vms', '2')
    assert status == 0
    got = rows(out)
    # 2013-07-02 is T0 + 1 day: hours 24..47 of VMs 1 and 2 (natural
    # order), times from 0.
    assert sorted({r['vm'] for r in got}) == ['1', '2']
    assert sorted({float(r['time']) for r in got}) == [
        3600.0 * h for h in range(24)]
    assert 'dropped 96 rows: outside --start/--days' in stdout
    assert 'VMs not read (--max-vms): 1' in stdout


def test_hosts_out_holds_the_busiest_step(tmp_path, capsys):
    src = fx.write_bitbrains(tmp_path / 'src', {
        '%d.csv' % vm: [fx.bitbrains_row(T0 + 300 * i, cores=8,
                                         capacity=20000.0)
                        for i in range(2)]
        for vm in range(5)})
    out, hosts = tmp_path / 'trace.csv', tmp_path / 'hosts.csv'
    status, stdout, _ = run(capsys, 'bitbrains', str(src), '-o', str(out),
                            '--hosts-out', str(hosts), '--host-cpus', '16',
                            '--host-memory-mb', '65536')
    assert status == 0
    # 5 VMs x 8 vCPUs on 16-core hosts: 3 hosts (memory needs 1).
    assert rows(hosts) == [{'host': 'host-%04d' % i, 'cpus': '16.0',
                            'memory_mb': '65536.0'} for i in range(3)]
    assert 'wrote %s: 3 hosts of 16 cores and 65536 MiB' % hosts in stdout
