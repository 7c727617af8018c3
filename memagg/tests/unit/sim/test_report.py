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

"""memagg-sim's summary (memagg.sim.report): its JSON fields and its text,
from results built by hand."""
import json

from memagg.sim import report
from memagg.tests.unit.sim import hand_results


def test_summary_fields(tmp_path):
    summary = report.summary(hand_results.results(), {'source': 'synthetic'},
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


def test_text_summary():
    text = report.text(report.summary(hand_results.results(), {}, {}))

    assert 'wss    active hosts mean 2.5 (min 2, max 4); migrations 4; ' \
           'memory overload 30.00%, cpu overload 10.00%' in text
    assert 'wss packing keeps 37.5% fewer hosts on' in text
