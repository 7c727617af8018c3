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

"""memagg-sim sweep: the --set grid, and a tiny real sweep through the
command line. The table's figures and its Pareto front are in
test_sweep_table."""
import argparse
import csv
import json
import re

import pytest

from memagg.cmd import sim as sim_cmd
from memagg.common import cli as common_cli
from memagg.scheduler import round_options
from memagg.sim import cli as sim
from memagg.sim import config as sim_config
from memagg.sim import engine
from memagg.sim import sweep
from memagg.sim import sweep_table

TINY = ['--hosts', '4', '--days', '1', '--seeds', '0,1', '--workers', '2']


def _run(capsys, *argv):
    status = sim_cmd.main(['sweep', *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_grid_values_split_at_top_level_commas_and_typed():
    grid = sweep.parse_grid([
        'overload_cpu_params={"otf": 0.1, "limit": 5}, {"otf": 0.2}',
        'history_length=50,100',
        'underload_require=either',
        'vm_selection_params={"a": "x,}"}'])

    assert grid == [
        ('overload_cpu_params', [('{"otf": 0.1, "limit": 5}',
                                  '{"otf": 0.1, "limit": 5}'),
                                 ('{"otf": 0.2}', '{"otf": 0.2}')]),
        ('history_length', [('50', 50), ('100', 100)]),
        ('underload_require', [('either', 'either')]),
        ('vm_selection_params', [('{"a": "x,}"}', '{"a": "x,}"}')]),
    ]
    # The first option varies slowest.
    assert [{name: text for name, (text, _) in setting.items()}
            for setting in sweep.settings(grid[:2])] == [
        {'overload_cpu_params': '{"otf": 0.1, "limit": 5}',
         'history_length': '50'},
        {'overload_cpu_params': '{"otf": 0.1, "limit": 5}',
         'history_length': '100'},
        {'overload_cpu_params': '{"otf": 0.2}', 'history_length': '50'},
        {'overload_cpu_params': '{"otf": 0.2}', 'history_length': '100'}]
    assert sweep.settings([]) == [{}]


def test_every_simulated_option_can_be_swept():
    names = sim_config.simulated_options()

    assert 'history_length' in names
    assert 'memory_basis' not in names
    for name in round_options.OPTIONS:
        if name != 'memory_basis':
            assert name in names


@pytest.mark.parametrize('text, message', [
    ('history_length', "expected NAME=VALUE[,VALUE...], got "
                       "'history_length'"),
    ('=5', "expected NAME=VALUE[,VALUE...], got '=5'"),
    ('nope=1', "no [consolidation] option 'nope'; sweep one of "),
    ('memory_basis=wss,booked', 'memory_basis: every setting packs by '
                                'working set'),
    ('poll_interval=1,2', 'poll_interval: memagg-sim does not simulate this '
                          'option; sweep one of '),
    ('history_length=0', 'history_length: Should be greater than or equal '
                         "to 1 (value '0')"),
    ('history_length=5,x', "history_length: invalid literal for int() with "
                           "base 10: 'x' (value 'x')"),
    ('history_length=5,,6', "history_length: empty value in '5,,6'"),
    ('history_length=5,05', "history_length: value '05' given twice"),
    ('underload_require=both,all', 'underload_require: Valid values are '
                                   "[both, either], but found 'all'"),
    ('overload_cpu_params={"otf": 0.1', 'overload_cpu_params: brackets or '
                                        'double quotes do not balance'),
    ('overload_cpu_params={"otf": 0.1}}', 'overload_cpu_params: brackets or '
                                          'double quotes do not balance'),
])
def test_grid_mistakes_name_the_option(text, message):
    with pytest.raises(common_cli.UsageError) as raised:
        sweep.parse_grid([text])

    assert str(raised.value).startswith('argument --set: ' + message), (
        str(raised.value))


def test_an_option_given_twice_is_refused():
    with pytest.raises(common_cli.UsageError) as raised:
        sweep.parse_grid(['history_length=5', 'history_length=6'])

    assert str(raised.value) == ('argument --set: history_length: given '
                                 'twice; list all its values in one --set')


def _simulated(capsys, tmp_path, name, *argv):
    """memagg-sim's own summary of the same trace and options."""
    out = tmp_path / name
    assert sim.main(['--hosts', '4', '--days', '1', '--no-plots', '--quiet',
                     '--output-dir', str(out), *argv]) == 0
    capsys.readouterr()
    return json.loads((out / 'summary.json').read_text())['bases']


def test_tiny_sweep_writes_the_table_json_and_plot(capsys, tmp_path):
    out_dir = tmp_path / 'sweep'

    status, out, err = _run(capsys, *TINY, '--set', 'history_length=20,288',
                            '--progress', '--output-dir', str(out_dir))

    assert status == 0, err
    # 2 seeds x (the booked reference and 2 settings) x 288 steps.
    assert '] 100% 1728/1728 steps' in err
    with open(out_dir / 'sweep.csv', newline='') as stream:
        rows = list(csv.DictReader(stream))
    assert [(row['setting'], row['history_length']) for row in rows] == [
        ('1', '20'), ('2', '288')]
    assert set(rows[0]) == {'setting', 'history_length', 'pareto'} | {
        name + suffix for name in sweep_table.FIGURES
        for suffix in ('', '_sd')}
    assert {row['pareto'] for row in rows} <= {'yes', 'no'}
    assert 'yes' in {row['pareto'] for row in rows}
    assert (out_dir / 'sweep.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    record = json.loads((out_dir / 'sweep.json').read_text())
    assert record['seeds'] == [0, 1]
    assert record['grid'] == {'history_length': ['20', '288']}
    assert 'seed' not in record['trace']['synthetic']
    assert record['trace']['hosts'] == 4

    # Each point is what memagg-sim runs with its options; the reference is
    # its booked basis with the defaults.
    for seed in (0, 1):
        defaults = _simulated(capsys, tmp_path, 'd%d' % seed, '--seed',
                              str(seed))
        short = _simulated(capsys, tmp_path, 's%d' % seed, '--seed',
                           str(seed), '--history-length', '20')
        seeds = record['reference']['seeds'][str(seed)]
        assert seeds['active_hosts'] == (
            defaults['booked']['active_hosts']['mean'])
        assert seeds['migrations'] == defaults['booked']['migrations'][
            'total']
        for number, wss in ((0, short['wss']), (1, defaults['wss'])):
            figures = record['rows'][number]['seeds'][str(seed)]
            assert figures['active_hosts'] == wss['active_hosts']['mean']
            assert figures['migrations'] == wss['migrations']['total']
    first = record['rows'][0]
    assert first['mean']['migrations'] == pytest.approx(
        (first['seeds']['0']['migrations']
         + first['seeds']['1']['migrations']) / 2)
    assert float(rows[0]['migrations']) == first['mean']['migrations']

    lines = out.splitlines()
    assert lines[0].startswith('booked reference: active hosts ')
    assert lines[0].endswith('(mean ±sd over seeds 0, 1)')
    assert re.match(r'#\s+history_length\s+hosts saved %', lines[1])
    assert re.match(r'1\s+20\s+\d+\.\d ±\d+\.\d ', lines[2])
    assert re.match(r'2\s+288\s+', lines[3])
    assert lines[-2] == 'wrote %s' % ', '.join(
        str(out_dir / name) for name in sweep.FILES)
    assert re.match(r'2 settings x 2 seeds, and the booked reference per '
                    r'seed: 6 simulations on 2 workers, wall time '
                    r'\d+\.\d s$', lines[-1])


@pytest.mark.parametrize('argv, message', [
    (['--set', 'nope=1'], "argument --set: no [consolidation] option "
                          "'nope'; sweep one of "),
    (['--set', 'history_length=x'], 'argument --set: history_length: '
                                    'invalid literal for int()'),
    (['--set', 'overload_cpu_params={"threshold": 0.8},{"threshold": 2}'],
     "argument --set: Invalid value for 'overload.threshold.threshold': "
     "must be between 0 and 1"),
    (['--set', 'overload_cpu=mhod,nope'],
     "argument --set: Invalid value for '[consolidation] overload_cpu': no "
     "overload plug-in 'nope'"),
    (['--seeds', '1,x'], "argument --seeds: must be an integer, got 'x'"),
    (['--seeds', '1,1'], "argument --seeds: must be distinct integers, got "
                         "'1,1'"),
    (['--workers', '0'], "argument --workers: must be an integer >= 1, got "
                         "'0'"),
    (['--hosts-file', 'h.csv'], 'argument --hosts-file: only with --trace'),
])
def test_errors_are_one_line(capsys, tmp_path, argv, message):
    status, out, err = _run(capsys, *argv, '--output-dir', str(tmp_path))

    assert status == 2
    assert out == ''
    assert err.count('\n') == 1
    assert err.startswith('memagg-sim sweep: error: ' + message), err


def _two_vm_trace(path, cpu):
    rows = ''.join('%d,%s,4096,2,%s,%d\n' % (300 * t, vm, cpu, 1000 - t)
                   for t in range(12) for vm in 'ab')
    path.write_text('time,vm,booked_mb,vcpus,cpu,wss_mb\n' + rows)
    return path


def test_synthetic_options_need_seeds_beside_a_trace(capsys, tmp_path):
    trace = _two_vm_trace(tmp_path / 'trace.csv', 1)

    status, _, err = _run(capsys, '--trace', str(trace), '--hosts', '2',
                          '--vms', '5', '--output-dir', str(tmp_path))

    assert status == 2
    assert err == ('memagg-sim sweep: error: argument --vms: only for the '
                   'synthetic trace; add --seeds to sweep synthetic traces '
                   'beside --trace\n')
    status, _, err = _run(capsys, '--trace', str(trace), '--trace',
                          str(trace), '--hosts', '2')
    assert status == 2
    assert err.endswith('argument --trace: %s given twice\n' % trace)


def test_traces_and_synthetic_seeds_together(capsys, tmp_path):
    """Several trace files and synthetic seeds in one sweep: each setting's
    figures on each, means over all of them, migrations also per VM per
    day (traces of different sizes weigh alike), each trace's figures
    printed; every trace's own figures are memagg-sim's on it."""
    quiet = _two_vm_trace(tmp_path / 'quiet.csv', 0.5)
    busy = _two_vm_trace(tmp_path / 'busy.csv', 1.5)
    out = tmp_path / 'sweep'

    status, stdout, err = _run(
        capsys, '--trace', str(quiet), '--trace', str(busy), '--hosts', '2',
        '--seeds', '3', '--days', '1', '--set', 'fill_window=1,12',
        '--output-dir', str(out))

    assert status == 0, err
    record = json.loads((out / 'sweep.json').read_text())
    assert record['seeds'] == ['quiet.csv', 'busy.csv', 3]
    assert set(record['traces']) == {'quiet.csv', 'busy.csv', '3'}
    # The synthetic trace keeps the generator's hosts; the files, --hosts.
    assert record['traces']['quiet.csv']['hosts'] == 2
    assert record['traces']['3']['hosts'] == 1000
    assert record['traces']['quiet.csv']['vms'] == 2
    for row in record['rows']:
        assert set(row['seeds']) == {'quiet.csv', 'busy.csv', '3'}
        for figures in row['seeds'].values():
            assert figures['migrations_per_vm_day'] >= 0
    assert sim.main(['--trace', str(quiet), '--hosts', '2', '--fill-window',
                     '12', '--no-plots', '--quiet', '--output-dir',
                     str(tmp_path / 'replay')]) == 0
    replay = json.loads((tmp_path / 'replay' / 'summary.json').read_text())[
        'bases']
    assert record['rows'][1]['seeds']['quiet.csv']['migrations'] == (
        replay['wss']['migrations']['total'])
    assert record['rows'][1]['seeds']['quiet.csv'][
        'migrations_per_vm_day'] == pytest.approx(
            replay['wss']['migrations']['total'] / (2 * 12 * 300 / 86400))
    lines = stdout.splitlines()
    assert lines[0].endswith('(mean ±sd over seed 3 and traces quiet.csv, '
                             'busy.csv)')
    each = lines.index('each trace:')
    assert len(lines[each + 2:each + 8]) == 6
    assert lines[each + 2].startswith('quiet.csv  1')
    assert re.match(r'2 settings x 3 traces, and the booked reference per '
                    r'trace: 9 simulations', lines[-1])


def test_a_failed_simulation_is_one_line_naming_it(capsys, tmp_path,
                                                   monkeypatch):
    def fail(self, progress=None):
        raise ValueError('boom')
    # The workers are forked after this: they inherit it.
    monkeypatch.setattr(engine.Simulation, 'run', fail)

    status, out, err = _run(capsys, *TINY, '--set', 'history_length=20,100',
                            '--output-dir', str(tmp_path))

    assert (status, out) == (1, '')
    assert re.fullmatch(r'memagg-sim sweep: error: (booked reference|'
                        r'setting \d), seed \d: boom\n', err), err


def test_help_documents_every_option_and_the_grid(capsys):
    parser = sweep.build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(['--help'])
    text = capsys.readouterr().out
    words = ' '.join(text.split())

    assert done.value.code == 0
    for action in parser._actions:
        if action.option_strings and action.dest != 'help':
            assert action.help and action.help != argparse.SUPPRESS
            assert ' '.join(action.help.split()[:4]) in words, action.dest
    assert '--set NAME=VALUE[,VALUE...]' in text
    assert ', '.join(sim_config.simulated_options()) in words
    assert 'Exit status: 0 done, 1 a simulation failed, 2 bad input' in text
    assert 'memagg-sim sweep --help' in sim.build_parser().description
