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

"""The JSON summary's figures and the PNG plots, from results built by
hand."""
import json

import numpy as np
import pytest

from memagg.sim import cli
from memagg.sim import config as sim_config
from memagg.sim import engine
from memagg.sim import inputs as sim_inputs
from memagg.sim import plots
from memagg.sim import progress
from memagg.sim import report
from memagg.sim import series as sim_series


def _result(basis, active, mem, cpu, by_trigger, **totals):
    """A Result whose migrations are ``by_trigger`` ({reason: per-step
    counts}) and their sum per step."""
    by_trigger = {reason: np.array(steps, dtype=int)
                  for reason, steps in by_trigger.items()}
    return engine.Result(
        basis=basis, step_s=300.0, active_hosts=np.array(active),
        mem_overloaded=np.array(mem), cpu_overloaded=np.array(cpu),
        migrations=sum(by_trigger.values(), np.zeros(len(active), int)),
        migrations_by_trigger=by_trigger, **totals)


@pytest.fixture
def results():
    return {
        'booked': _result('booked', [4, 4, 4, 4], [0, 0, 0, 0],
                          [0, 1, 0, 0], {}, rounds=4),
        'wss': _result('wss', [4, 2, 2, 2], [0, 1, 2, 0], [0, 0, 0, 1],
                       {'underload:cpu+memory': [3, 0, 0, 0],
                        'overload:memory': [0, 0, 1, 0]},
                       power_on=1, power_off=2, rounds=4, partial_rounds=1,
                       unplaced=2, kept=1, rejected=['x'], wall_s=1.23456),
    }


def test_summary_fields(results, tmp_path):
    summary = report.summary(results, {'source': 'synthetic'},
                             {'history_length': 100})
    path = tmp_path / 'summary.json'
    report.write(summary, path)
    wss = json.loads(path.read_text())['bases']['wss']

    assert wss['active_hosts'] == {'mean': 2.5, 'min': 2, 'max': 4,
                                   'first': 4, 'last': 2,
                                   'host_seconds': 3000.0}
    assert wss['migrations'] == {'total': 4, 'by_trigger': {
        'overload:memory': 1, 'underload:cpu+memory': 3}}
    # 3 host-steps of 300 s overloaded out of 10 host-steps on.
    assert wss['memory_overload'] == {'host_seconds': 900.0,
                                      'fraction': 0.3}
    assert wss['cpu_overload'] == {'host_seconds': 300.0, 'fraction': 0.1}
    assert (wss['power_on'], wss['power_off']) == (1, 2)
    assert wss['rounds'] == {'total': 4, 'partial': 1, 'unplaced_vms': 2,
                             'kept_hosts': 1}
    assert wss['rejected_vms'] == ['x']
    assert wss['wall_time_s'] == 1.235
    assert summary['comparison'] == {
        'active_hosts_mean_booked': 4.0, 'active_hosts_mean_wss': 2.5,
        'hosts_saved_ratio': 0.375}
    assert summary['trace'] == {'source': 'synthetic'}
    assert summary['settings'] == {'history_length': 100}
    assert summary['bases']['booked']['cpu_overload']['fraction'] == 1 / 16


def test_text_summary(results):
    text = report.text(report.summary(results, {}, {}))

    assert 'wss    active hosts mean 2.5 (min 2, max 4); migrations 4; ' \
           'memory overload 30.00%, cpu overload 10.00%' in text
    assert 'wss packing keeps 37.5% fewer hosts on' in text


def test_plots_are_png_files(results, tmp_path):
    paths = plots.write_all(results, str(tmp_path))

    assert [p.rsplit('/', 1)[-1] for p in paths] == list(plots.FILES)
    assert 'remote.png' in plots.FILES
    for path in paths:
        with open(path, 'rb') as stream:
            data = stream.read()
        assert data.startswith(b'\x89PNG\r\n\x1a\n')
        assert len(data) > 5000


def _steps(values):
    return np.array(values, dtype=int)


def test_migration_rate_sets_the_first_round_apart():
    # 30 steps of 5 minutes: bins of 12 steps, the last of 6.
    cpu = _steps([5] + [0] * 11 + [1] * 12 + [0] * 5 + [2])
    memory = _steps([2] + [0] * 13 + [3] + [0] * 15)
    result = _result('wss', [1] * 30, [0] * 30, [0] * 30,
                     {'overload:cpu': cpu, 'overload:memory': memory})
    assert result.by_trigger == {'overload:cpu': 19, 'overload:memory': 5}
    rate = sim_series.migration_rate(result)

    assert rate.first_round == {'overload:cpu': 5, 'overload:memory': 2}
    assert rate.bin_hours.tolist() == [1.0, 1.0, 0.5]
    assert rate.start_days.tolist() == pytest.approx([0, 1 / 24, 2 / 24])
    assert rate.per_hour['overload:cpu'].tolist() == [0, 12, 4]
    assert rate.per_hour['overload:memory'].tolist() == [0, 3, 0]
    # The bins and the first round add up to the totals.
    for trigger, total in result.by_trigger.items():
        assert (rate.first_round[trigger]
                + (rate.per_hour[trigger] * rate.bin_hours).sum()) == total
    # The steady rate leaves the first round out: 17 migrations over the
    # 29 steps after it.
    assert rate.steady_per_hour == pytest.approx(17 / (29 * 300 / 3600))


def test_migration_rate_bins_long_steps_one_each():
    series = _steps([0, 2, 0, 1])
    result = engine.Result(
        basis='wss', step_s=7200.0, active_hosts=np.ones(4, dtype=int),
        mem_overloaded=np.zeros(4), cpu_overloaded=np.zeros(4),
        migrations=series, migrations_by_trigger={'overload:cpu': series})
    assert result.by_trigger == {'overload:cpu': 3}
    rate = sim_series.migration_rate(result)

    assert rate.bin_hours.tolist() == [2.0] * 4
    assert rate.per_hour['overload:cpu'].tolist() == [0, 1, 0, 0.5]
    assert rate.steady_per_hour == pytest.approx(3 / 6)


def test_engine_counts_migrations_by_trigger_per_step():
    result = engine_results()['wss']
    by_step = sum(result.migrations_by_trigger.values())

    assert len(result.by_trigger) >= 2
    assert sorted(result.migrations_by_trigger) == sorted(result.by_trigger)
    assert by_step.tolist() == result.migrations.tolist()
    for trigger, steps in result.migrations_by_trigger.items():
        assert steps.sum() == result.by_trigger[trigger]


def engine_results():
    """Both bases over a synthetic day, run by memagg-sim's parts."""
    args = cli.build_parser().parse_args(
        ['--hosts', '40', '--days', '1', '--seed', '3'])
    conf = sim_config.load_config(None)
    config = sim_config.configure(
        conf, {name: getattr(args, name)
               for name in sim_config.simulated_options()}, args)
    trace, hosts, initial, _ = sim_inputs.inputs(args)
    wss = config.wss_maxavg(trace)
    return {basis: config.simulation(trace, hosts, initial, wss,
                                     config.algorithms(basis)).run()
            for basis in ('booked', 'wss')}


def test_setting_label_writes_out_the_values_swept():
    options = {'placement_params': '{"cpu_threshold": 0.6}',
               'history_length': '30', 'underload_require': 'both'}

    assert plots.setting_label(options, ['placement_params',
                                         'history_length']) == (
        'cpu_threshold=0.6\nhistory_length=30')
    assert plots.setting_label(options, ['underload_require']) == (
        'underload_require=both')


def test_progress_bar_draws_and_ends_the_line(tmp_path):
    out = tmp_path / 'err'
    with open(out, 'w') as stream:
        bar = progress.Progress(4, stream, enabled=True, interval=0)
        for done in range(1, 5):
            bar.update(done)
        bar.close()
    with open(out, newline='') as stream:
        text = stream.read()

    assert '\r[' + '#' * 15 + '.' * 15 + ']  50% 2/4 steps' in text
    # Redrawn in place, the last state ending the line.
    assert '\n' not in text[:-1]
    assert text.endswith('] 100% 4/4 steps, 0 s, 0 s left \n')


def test_progress_bar_silent_when_disabled(tmp_path):
    out = tmp_path / 'err'
    with open(out, 'w') as stream:
        bar = progress.Progress(4, stream, enabled=False)
        bar.update(4)
        bar.close()

    assert out.read_text() == ''
