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

"""What memagg-sim import writes is what memagg-sim reads: each format's
output loads with memagg.sim.trace and replays with its --hosts-out file;
the console script dispatches ``import``; and the big-file formats convert
in memory that does not grow with the number of VMs (a fresh interpreter
per run, tracemalloc's peak)."""
import json
import subprocess
import sys

import pytest

from memagg.cmd import sim as sim_cmd
from memagg.sim import cli as sim
from memagg.sim import trace as sim_trace
from memagg.tests.unit.sim import import_fixtures as fx
from memagg.tests.unit.sim.import_fixtures import run

T0 = fx.T0


def _sources(root, vms, steps):
    """A source of each format with ``vms`` VMs of ``steps`` 300 s samples
    each (Alibaba: 10 s samples, 30 per step)."""
    bitbrains = fx.write_bitbrains(root / 'bitbrains', {
        '%d.csv' % vm: [fx.bitbrains_row(T0 + 300 * t, usage=100.0 * (vm + t))
                        for t in range(steps)] for vm in range(vms)})
    meta = [fx.alibaba_meta_row('c_%d' % vm, machine='m_%d' % (vm % 3))
            for vm in range(vms)]
    usage = (fx.alibaba_usage_row('c_%d' % vm, 1 + 10 * t,
                                  cpu=(vm + t) % 100, mem=(vm * 7 + t) % 100,
                                  machine='m_%d' % (vm % 3))
             for t in range(steps * 30) for vm in range(vms))
    alibaba = fx.write_alibaba(root / 'alibaba', meta, usage)
    google = fx.write_google(
        root / 'google',
        [fx.google_usage_row(vm, 0, 600 + 300 * t, cpus=0.001 * (vm + t),
                             machine=vm % 3)
         for t in range(steps) for vm in range(vms)],
        [fx.google_event_row(vm, 0) for vm in range(vms)])
    return {'bitbrains': bitbrains, 'alibaba2018': alibaba,
            'google2019': google}


@pytest.mark.parametrize('fmt,hosts', [('bitbrains', 1), ('alibaba2018', 3),
                                       ('google2019', 3)])
def test_the_output_replays_in_memagg_sim(tmp_path, capsys, fmt, hosts):
    src = _sources(tmp_path, vms=5, steps=24)[fmt]
    out, hosts_csv = tmp_path / 'trace.csv', tmp_path / 'hosts.csv'
    status, stdout, _ = run(capsys, fmt, str(src), '-o', str(out),
                            '--hosts-out', str(hosts_csv), '--start',
                            str(T0) if fmt == 'bitbrains' else '0')
    assert status == 0
    trace = sim_trace.read_trace(out)
    assert (trace.vms, trace.steps, trace.step_s) == (5, 24, 300.0)
    assert len(sim_trace.read_hosts(hosts_csv)) == hosts
    assert sim.main(['--trace', str(out), '--hosts-file', str(hosts_csv),
                     '--no-plots', '--jobs', '1', '--quiet', '--output-dir',
                     str(tmp_path / 'out')]) == 0
    with open(tmp_path / 'out' / 'summary.json') as stream:
        described = json.load(stream)['trace']
    assert (described['vms'], described['steps'], described['hosts']) == (
        5, 24, hosts)


def test_the_console_script_dispatches_import(tmp_path, capsys):
    src = _sources(tmp_path, vms=2, steps=3)['google2019']
    assert sim_cmd.main(['import', 'google2019', str(src), '-o',
                         str(tmp_path / 'trace.csv')]) == 0
    assert 'wrote %s: 6 rows, 2 VMs, 3 steps' % (tmp_path / 'trace.csv') in (
        capsys.readouterr().out)
    with pytest.raises(SystemExit):
        sim_cmd.main(['--help'])
    assert 'memagg-sim import' in capsys.readouterr().out


PEAK = """
import sys
import tracemalloc

from memagg.sim import trace_import

fmt, warm, warm_out, src, out = sys.argv[1:]
options = ['--chunk-mb', '0.03125', '--quiet']
# A first run, on the 1-VM source, imports and loads all the conversion
# uses: the peak traced below is the conversion's own, whether Python
# found its bytecode caches or had to compile the sources (which once
# inflated the baseline by more than the growth measured).
assert trace_import.main([fmt, warm, '-o', warm_out] + options) == 0
tracemalloc.start()
status = trace_import.main([fmt, src, '-o', out] + options)
print(status, tracemalloc.get_traced_memory()[1])
"""


def _peak(fmt, warm, src, out):
    done = subprocess.run(
        [sys.executable, '-c', PEAK, fmt, str(warm), str(out) + '.warm',
         str(src), str(out)],
        capture_output=True, text=True, check=True, timeout=600)
    status, peak = done.stdout.split()
    assert status == '0', done.stderr
    return int(peak)


def _input_bytes(src):
    return sum(path.stat().st_size for path in src.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize('fmt', ['alibaba2018', 'google2019'])
def test_memory_does_not_grow_with_the_vms(tmp_path, fmt):
    sources = {vms: _sources(tmp_path / str(vms), vms=vms, steps=6)[fmt]
               for vms in (1, 100, 400)}
    peaks = {vms: _peak(fmt, sources[1], src, tmp_path / ('%d.csv' % vms))
             for vms, src in sources.items()}
    assert sim_trace.read_trace(tmp_path / '400.csv').vms == 400
    # Above the 1-VM run's: four times the VMs and input add little (a
    # spill bucket of 32 KiB of input holds the same rows; only Alibaba's
    # sizes per container grow: 507 KB for 100 VMs, 580 KB for 400,
    # measured), far below the input's size, whereas the 400 VMs' rows
    # (72,000 for Alibaba, 2.9 MB of input) held at once took 18.9 MB.
    small, big = peaks[100] - peaks[1], peaks[400] - peaks[1]
    assert big <= 2 * small + (256 << 10)
    assert big < _input_bytes(sources[400]) / 2


def test_progress_is_drawn_on_request_and_a_date_needs_a_unix_clock(
        tmp_path, capsys):
    sources = _sources(tmp_path, vms=2, steps=3)
    status, _, err = run(capsys, 'alibaba2018', str(sources['alibaba2018']),
                         '-o', str(tmp_path / 'a.csv'), '--progress')
    assert status == 0
    # One bar per pass: the MiB read, then the spill buckets.
    assert 'MiB read' in err and '1/1 buckets' in err
    status, _, err = run(capsys, 'bitbrains', str(sources['bitbrains']),
                         '-o', str(tmp_path / 'b.csv'), '--progress')
    assert status == 0 and '2/2 VMs' in err
    status, _, err = run(capsys, 'google2019', str(sources['google2019']),
                         '-o', str(tmp_path / 'g.csv'), '--start',
                         '2019-05-01')
    assert status == 2
    assert err.startswith('memagg-sim import: error: argument --start: '
                          'google2019 counts seconds from the trace\'s '
                          'start')


def test_nothing_kept_is_status_1_and_no_file(tmp_path, capsys):
    src = _sources(tmp_path, vms=2, steps=3)['google2019']
    out = tmp_path / 'trace.csv'
    status, stdout, err = run(capsys, 'google2019', str(src), '-o', str(out),
                              '--start', '86400')
    assert status == 1
    assert 'dropped 6 rows: outside --start/--days' in stdout
    assert err == ('memagg-sim import: error: nothing written: no row of %s '
                   'was kept (see the counts above)\n' % src)
    assert not out.exists()
