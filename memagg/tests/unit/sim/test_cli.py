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

"""memagg-sim's command line, run in-process: help, one-line errors,
configuration, outputs and progress."""
import argparse
import json

import pytest

from memagg.scheduler import round_options
from memagg.sim import cli as sim
from memagg.sim import plots
from memagg.sim import trace as sim_trace

SMALL = ['--hosts', '6', '--days', '0.25', '--no-plots']


def _run(capsys, *argv):
    status = sim.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _summary(directory):
    with open(directory / 'summary.json') as stream:
        return json.load(stream)


def test_help_documents_every_option(capsys):
    parser = sim.build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(['--help'])
    text = capsys.readouterr().out
    # argparse wraps help at the terminal's width: compare words.
    words = ' '.join(text.split())

    assert done.value.code == 0
    options = [action for action in parser._actions
               if action.option_strings and action.dest != 'help']
    assert len(options) > 40
    for action in options:
        assert action.help and action.help != argparse.SUPPRESS, action.dest
        assert action.option_strings[0] in text
        assert ' '.join(action.help.split()[:4]) in words, action.dest
    for column in ('time', 'vm', 'booked_mb', 'vcpus', 'cpu', 'wss_mb',
                   'host'):
        assert '\n  %s ' % column in text
    assert 'hosts CSV (--hosts-file): host,cpus,memory_mb' in text
    assert 'Exit status: 0 done, 1 the simulation failed, 2 bad input' in text


def test_every_consolidation_option_can_be_given():
    dests = {action.dest for action in sim.build_parser()._actions}

    for name in round_options.OPTIONS:
        if name != 'memory_basis':
            assert name in dests


@pytest.fixture
def bad_trace(tmp_path):
    path = tmp_path / 'trace.csv'
    path.write_text('time,vm,booked_mb,vcpus,cpu,wss_mb\n'
                    '0,a,4096,2,1,1000\n300,a,4096,2,1,x\n')
    return path


@pytest.mark.parametrize('argv, message', [
    (['--hosts', '0'], "argument --hosts: must be an integer >= 1, got '0'"),
    (['--used-ratio', '0'],
     "argument --used-ratio: must be a number > 0 and <= 1, got '0'"),
    (['--vms', '5000', '--hosts', '2'], 'argument --vms: 5000 VMs book'),
    (['--nope'], 'unrecognized arguments: --nope'),
    (['--overload-cpu', 'nope'],
     "Invalid value for '[consolidation] overload_cpu': no overload plug-in "
     "'nope'; use one of iqr, last_n_average, lr, lrr, mad, mhod, otf, "
     "threshold"),
    (['--overload-cpu-params', '{bad'],
     "Invalid value for '[consolidation] overload_cpu_params': not valid "
     "JSON"),
    (['--overload-cpu-params', '{"threshold": 2}'],
     "Invalid value for 'overload.threshold.threshold': must be between 0 "
     "and 1"),
    (['--placement-params', '{"cpu_limit": 1}'],
     "Invalid value for 'placement.best_fit_decreasing.cpu_limit': unknown "
     "parameter"),
    (['--underload-require', 'all'],
     "Invalid value for '[consolidation] underload_require': must be 'both' "
     "or 'either'"),
    (['--config-file', '/nonexistent/memagg.conf'],
     'argument --config-file: Failed to find some config files: '
     '/nonexistent/memagg.conf'),
])
def test_errors_are_one_line(capsys, tmp_path, argv, message):
    status, out, err = _run(capsys, *argv, '--output-dir', str(tmp_path))

    assert status == 2
    assert out == ''
    assert err.count('\n') == 1
    assert err.startswith('memagg-sim: error: ' + message), err


def test_trace_errors_name_line_and_field(capsys, tmp_path, bad_trace):
    status, _, err = _run(capsys, '--trace', str(bad_trace), '--hosts', '2',
                          '--output-dir', str(tmp_path))

    assert status == 2
    assert err == ("memagg-sim: error: %s:3: field wss_mb: must be a number "
                   "between 0 and booked_mb (4096), got 'x'\n" % bad_trace)


HEADER = b'time,vm,booked_mb,vcpus,cpu,wss_mb\n'


@pytest.mark.parametrize('content, line, message', [
    (HEADER + b'0,vm-\xe9,4096,2,0.5,100\n', 2,
     'not UTF-8 (byte 0xe9 at column 6); save the file as UTF-8'),
    # A field past csv's own limit (131,072) was a traceback; a 1 GB one
    # was read whole first.
    (HEADER + b'0,' + b'v' * 200000 + b',4096,2,0.5,100\n', 2,
     'line longer than 65536 bytes'),
    (b'\xff\xfe' + 'time'.encode('utf-16-le'), 1, 'not UTF-8 (byte 0xff'),
])
def test_a_file_that_is_no_trace_is_one_line_naming_it(
        capsys, tmp_path, content, line, message):
    trace = tmp_path / 'trace.csv'
    trace.write_bytes(content)
    status, out, err = _run(capsys, '--trace', str(trace), '--hosts', '2',
                            '--output-dir', str(tmp_path))

    assert (status, out, err.count('\n')) == (2, '', 1), err
    assert err.startswith('memagg-sim: error: %s:%d: %s'
                          % (trace, line, message)), err


@pytest.mark.parametrize('argv, message', [
    (['--vms', '3'], 'argument --vms: only for the synthetic trace; leave '
                     'it out with --trace'),
    (['--write-trace', 'x.csv'], 'argument --write-trace: only for the '
                                 'synthetic trace; leave it out with '
                                 '--trace'),
    ([], 'argument --hosts: the trace names no hosts; give --hosts N or '
         '--hosts-file FILE'),
])
def test_trace_option_mistakes(capsys, tmp_path, argv, message):
    path = tmp_path / 'trace.csv'
    path.write_text('time,vm,booked_mb,vcpus,cpu,wss_mb\n'
                    '0,a,4096,2,1,1000\n300,a,4096,2,1,900\n')

    status, _, err = _run(capsys, '--trace', str(path), *argv,
                          '--output-dir', str(tmp_path))

    assert status == 2
    assert err == 'memagg-sim: error: %s\n' % message


def test_config_file_then_options(capsys, tmp_path):
    config = tmp_path / 'memagg.conf'
    config.write_text('[consolidation]\nunderload_cpu = never\n'
                      'history_length = 7\n[wss]\nmaxavg_samples = 2\n')
    never = tmp_path / 'never'
    back = tmp_path / 'back'

    _run(capsys, *SMALL, '--config-file', str(config), '--output-dir',
         str(never))
    _run(capsys, *SMALL, '--config-file', str(config), '--underload-cpu',
         'last_n_average', '--output-dir', str(back))
    never, back = _summary(never), _summary(back)

    assert never['settings']['consolidation']['underload_cpu'] == 'never'
    assert never['settings']['history_length'] == 7
    assert never['settings']['maxavg_samples'] == 2
    for basis in ('booked', 'wss'):
        assert not any(reason.startswith('underload') for reason in
                       never['bases'][basis]['migrations']['by_trigger'])
    assert back['settings']['consolidation']['underload_cpu'] == (
        'last_n_average')
    assert back['bases']['wss']['migrations']['by_trigger'][
        'underload:cpu+memory'] > 0


def test_bad_value_in_config_file_names_the_option(capsys, tmp_path):
    config = tmp_path / 'memagg.conf'
    config.write_text('[consolidation]\nhistory_length = many\n')

    status, _, err = _run(capsys, *SMALL, '--config-file', str(config),
                          '--output-dir', str(tmp_path))

    assert status == 2
    assert err.startswith("memagg-sim: error: Invalid value for "
                          "'[consolidation] history_length'")
    assert err.count('\n') == 1


def test_hand_checked_trace_through_the_cli(capsys, tmp_path):
    # The three-host trace of test_engine: by working set the VMs pack onto
    # one host, which is in memory overload for one step.
    rows = ['time,vm,booked_mb,vcpus,cpu,wss_mb,host']
    for t in range(8):
        for vm, host in (('v1', 'h-a'), ('v2', 'h-b'), ('v3', 'h-c')):
            rows.append('%d,%s,600,1,0.2,%d,%s' % (
                t * 300, vm, 300 if t < 4 else 400, host if t == 0 else ''))
    trace = tmp_path / 'trace.csv'
    trace.write_text('\n'.join(rows) + '\n')
    hosts = tmp_path / 'hosts.csv'
    hosts.write_text('host,cpus,memory_mb\nh-a,4,1000\nh-b,4,1000\n'
                     'h-c,4,1000\n')
    out_dir = tmp_path / 'out'

    # No memory headroom: h-b takes both other VMs, as test_engine
    # follows by hand.
    status, out, err = _run(capsys, '--trace', str(trace), '--hosts-file',
                            str(hosts), '--maxavg-samples', '1',
                            '--fill-headroom-mem', '0',
                            '--output-dir', str(out_dir))
    summary = _summary(out_dir)

    assert (status, err) == (0, '')
    booked, wss = summary['bases']['booked'], summary['bases']['wss']
    assert booked['active_hosts']['mean'] == 3
    assert booked['memory_overload'] == {'host_seconds': 0.0,
                                         'fraction': 0.0}
    assert wss['active_hosts']['mean'] == 13 / 8
    assert wss['memory_overload'] == {'host_seconds': 300.0,
                                      'fraction': 1 / 13}
    assert wss['migrations']['by_trigger'] == {'overload:memory': 1,
                                               'underload:cpu+memory': 2}
    assert summary['comparison']['hosts_saved_ratio'] == pytest.approx(
        1 - (13 / 8) / 3)
    assert summary['trace'] == {
        'source': str(trace), 'steps': 8, 'step_s': 300.0,
        'duration_s': 2400.0, 'vms': 3, 'hosts': 3}
    assert summary['settings']['migration_time_s'] == 300.0
    assert 'wss packing keeps 45.8% fewer hosts on' in out
    for name in plots.FILES:
        assert (out_dir / name).stat().st_size > 0


def test_written_synthetic_trace_replays_the_same(capsys, tmp_path):
    written = tmp_path / 'synthetic.csv'
    first, second = tmp_path / 'first', tmp_path / 'second'

    _run(capsys, *SMALL, '--seed', '3', '--write-trace', str(written),
         '--output-dir', str(first))
    status, _, err = _run(capsys, '--trace', str(written), '--no-plots',
                          '--output-dir', str(second))
    first, second = _summary(first), _summary(second)

    assert (status, err) == (0, '')
    assert sim_trace.read_trace(written).vms == 60
    assert first['trace']['synthetic']['seed'] == 3
    for summary in (first, second):
        for basis in summary['bases'].values():
            del basis['wall_time_s']
    assert first['bases'] == second['bases']
    assert first['bases']['wss']['migrations']['total'] > 0


def test_two_processes_give_what_one_gives(capsys, tmp_path):
    one, two = tmp_path / 'one', tmp_path / 'two'

    _run(capsys, *SMALL, '--jobs', '1', '--output-dir', str(one))
    _run(capsys, *SMALL, '--jobs', '2', '--output-dir', str(two))
    one, two = _summary(one), _summary(two)

    for summary in (one, two):
        for basis in summary['bases'].values():
            del basis['wall_time_s']
    assert one == two


def test_progress_bar_with_progress_and_none_with_quiet(capsys, tmp_path):
    status, out, err = _run(capsys, *SMALL, '--progress', '--output-dir',
                            str(tmp_path / 'a'))
    quiet = _run(capsys, *SMALL, '--quiet', '--output-dir',
                 str(tmp_path / 'b'))

    assert status == 0
    # Both bases' steps: 72 each.
    assert '] 100% 144/144 steps' in err
    assert err.endswith('\n')
    assert 'active hosts mean' in out
    assert quiet == (0, '', '')
    assert (tmp_path / 'b' / 'summary.json').exists()
