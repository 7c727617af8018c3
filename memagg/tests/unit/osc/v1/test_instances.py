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

"""``openstack memagg instance wss list`` and ``instance list`` through
memagg's real client against the real API served on loopback: the sampler
behind each estimate shows with --long, from microversion 1.8; host
reclaim with --long and in ``instance show``, from 1.11."""
import types

from cliff import columns as cliff_columns
import pytest

from memaggclient.osc.v1 import instances
from memagg.tests.unit.api import data

SAMPLER = ['sampler_backend', 'sampler_error_mb', 'sampler_pages',
           'warming']
HISTORY_RECLAIM = ['reclaimed_mb', 'promotion_rate']
LIST_RECLAIM = HISTORY_RECLAIM + ['promotion_slo', 'reclaim_mechanism']


def _value(cell):
    """A cell as -f json shows it."""
    if isinstance(cell, cliff_columns.FormattableColumn):
        return cell.machine_readable()
    return cell


def _run(make_client, command_class, argv, version=None):
    app = types.SimpleNamespace(client_manager=types.SimpleNamespace(
        memagg=make_client(version)))
    command = command_class(app, None)
    columns, rows = command.take_action(
        command.get_parser('memagg').parse_args(argv))
    return list(columns), [{c: _value(v) for c, v in zip(columns, row)}
                           for row in rows]


def test_wss_history_long_shows_the_sampler_of_each_window(make_client):
    columns, rows = _run(make_client, instances.ListInstanceWss,
                         [data.INSTANCE_A, '--long'])

    assert columns[-6:] == SAMPLER + HISTORY_RECLAIM
    assert [{k: r[k] for k in SAMPLER} for r in rows] == [
        data.sampler(i) for i in range(data.SAMPLES)]


@pytest.mark.parametrize('argv, version', [
    ([], None), (['--long'], '1.7')])
def test_wss_history_without_the_sampler(make_client, argv, version):
    columns, rows = _run(make_client, instances.ListInstanceWss,
                         [data.INSTANCE_A] + argv, version)

    assert not set(SAMPLER) & set(columns)
    assert [r['wss_mb'] for r in rows] == list(range(1000, 1006))


def test_instance_list_long_shows_the_latest_sampler(make_client):
    columns, rows = _run(make_client, instances.ListInstance, ['--long'])

    latest = data.sampler(data.SAMPLES - 1)
    assert {'sampler_backend', 'sampler_error_mb', 'warming'} <= set(columns)
    assert [(r['sampler_backend'], r['sampler_error_mb'], r['warming'])
            for r in rows] == [(latest['sampler_backend'],
                                latest['sampler_error_mb'],
                                latest['warming'])] * 2


def test_wss_history_long_shows_host_reclaim_of_each_period(make_client):
    columns, rows = _run(make_client, instances.ListInstanceWss,
                         [data.INSTANCE_A, '--long'])

    assert [{k: r[k] for k in HISTORY_RECLAIM} for r in rows] == [
        data.reclaim(i) for i in range(data.SAMPLES)]


@pytest.mark.parametrize('argv, version', [
    ([], None), (['--long'], '1.10')])
def test_wss_history_without_host_reclaim(make_client, argv, version):
    columns, rows = _run(make_client, instances.ListInstanceWss,
                         [data.INSTANCE_A] + argv, version)

    assert not set(HISTORY_RECLAIM) & set(columns)
    assert len(rows) == data.SAMPLES


def test_instance_list_long_shows_host_reclaim(make_client):
    columns, rows = _run(make_client, instances.ListInstance, ['--long'])

    assert columns.index('warming') < columns.index('reclaimed_mb')
    assert [{k: r[k] for k in LIST_RECLAIM} for r in rows] == [
        {k: data.RECLAIM[k] for k in LIST_RECLAIM}] * 2
    plain, _ = _run(make_client, instances.ListInstance, [])
    older, _ = _run(make_client, instances.ListInstance, ['--long'], '1.10')
    assert not set(LIST_RECLAIM) & (set(plain) | set(older))


def _show_cells(make_client, version=None):
    app = types.SimpleNamespace(client_manager=types.SimpleNamespace(
        memagg=make_client(version)))
    command = instances.ShowInstance(app, None)
    names, cells = command.take_action(
        command.get_parser('memagg').parse_args([data.INSTANCE_A]))
    return dict(zip(names, cells))


def _show(make_client, version=None):
    return {name: _value(cell) for name, cell in
            _show_cells(make_client, version).items()}


def test_decimals_are_rounded_in_a_table_only(make_client):
    cells = _show_cells(make_client)
    rate = data.RECLAIM['promotion_rate_pct']

    assert len(repr(rate)) > 10
    assert cells['promotion_rate_pct'].human_readable() == '%.2f' % rate
    assert cells['promotion_rate_pct'].machine_readable() == rate


def test_instance_show_has_host_reclaim_from_1_11(make_client):
    shown, older = _show(make_client, '1.11'), _show(make_client, '1.10')

    assert {k: shown[k] for k in data.RECLAIM} == data.RECLAIM
    assert not set(data.RECLAIM) & set(older)
    assert {k: v for k, v in shown.items() if k not in data.RECLAIM} == older
    assert _show(make_client)['l1_share_mb'] == 384
