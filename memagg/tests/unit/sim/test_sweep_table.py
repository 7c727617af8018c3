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

"""The sweep's table: each setting's figures against the reference, and
the Pareto front over them, on hand-made rows."""
import pytest

from memagg.sim import sweep_table


def _row(saved, migrations, memory, cpu, remote=0.0):
    return {'mean': {'hosts_saved_pct': saved,
                     'migrations_per_vm_day': migrations,
                     'memory_overload_pct': memory, 'cpu_overload_pct': cpu,
                     'remote_pct': remote}}


def test_pareto_front_of_hand_made_rows():
    rows = [
        _row(50, 1000, 0.0, 0.0),   # front: none saves 50 % in fewer
        _row(50, 1200, 0.0, 0.0),   # behind the first: more migrations
        _row(40, 100, 0.0, 0.1),    # front: fewest migrations
        _row(40, 100, 0.05, 0.1),   # behind the third: more overload
        _row(60, 5000, 0.3, 0.2),   # front: most hosts saved
        # Behind the fifth: less memory overload but more in all (0.55).
        _row(60, 5000, 0.1, 0.45),
        _row(45, 500, 0.0, 0.0),    # front: between the first and third
        _row(45, 500, 0.0, 0.0),    # its twin: neither beats the other
    ]

    assert sweep_table.pareto_front(rows) == [
        True, False, True, False, True, False, True, True]
    assert sweep_table.pareto_front([]) == []


def test_time_partly_remote_counts_on_the_front():
    # The second saves as many hosts in as many migrations, without
    # overload, but only by running VMs partly remote 2 % of the time.
    rows = [_row(50, 1000, 0.0, 0.0), _row(50, 1000, 0.0, 0.0, remote=2.0),
            _row(55, 1000, 0.0, 0.0, remote=2.0)]

    assert sweep_table.pareto_front(rows) == [True, False, True]


def test_figures_against_the_reference():
    def summary(active, by_trigger, memory, cpu, remote=None):
        return {'active_hosts': {'mean': active},
                'migrations': {'total': sum(by_trigger.values()),
                               'by_trigger': by_trigger},
                'memory_overload': {'fraction': memory},
                'cpu_overload': {'fraction': cpu}, 'remote': remote}
    booked = summary(40.0, {'underload:cpu+memory': 10}, 0.0, 0.0)
    wss = summary(10.0, {'overload:cpu': 60, 'overload:memory': 15,
                         'overload:cpu+memory': 5,
                         'underload:cpu+memory': 20}, 0.001, 0.0025,
                  {'partly_remote': {'vm_fraction': 0.004},
                   'grants': {'churn': 7}})

    assert sweep_table.figures(wss, booked, days=500) == pytest.approx({
        'hosts_saved_pct': 75.0, 'active_hosts': 10.0, 'migrations': 100,
        'migrations_per_vm_day': 0.2, 'migrations_vs_booked': 10.0,
        'memory_triggered_pct': 20.0, 'memory_overload_pct': 0.1,
        'cpu_overload_pct': 0.25, 'remote_pct': 0.4, 'grant_churn': 7})
    # Without remote memory (--max-remote-ratio 0), none is used.
    assert sweep_table.figures(booked, booked)['remote_pct'] == 0.0
    assert sweep_table.figures(booked, booked)['hosts_saved_pct'] == 0.0
    assert sweep_table.figures(summary(5.0, {}, 0, 0), booked)[
        'memory_triggered_pct'] == 0.0
