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

"""The charts' scales and the cloud-wide summary."""
import pytest

from memagg.dashboard import api
from memagg.dashboard import charts


@pytest.mark.parametrize('value, ceiling', [
    (0, 1), (1, 1), (3, 5), (10, 10), (11, 20), (65536, 100000),
    (4096, 5000), (1999, 2000)])
def test_nice_ceiling(value, ceiling):
    assert charts.nice_ceiling(value) == ceiling


def _row(host, memory, wss, booked=0, state='active'):
    return dict(host=host, state=state, memory_mb=memory, reserved_mb=0,
                wss_maxavg_mb=wss, booked_mb=booked, lent_mb=0,
                borrowed_mb=0, free_reservoir_mb=0)


def test_summary_packs_wss_onto_the_largest_hosts():
    rows = [_row('a', 1000, 600, 900), _row('b', 4000, 900, 2000),
            _row('c', 2000, 1000, 1500), _row('d', 8000, 0, state='standby')]
    # 2500 MiB of WSS: b (4000) holds it all; a and c could be emptied.
    summary = api.summary(rows)
    assert summary['emptiable_hosts'] == 2
    assert summary['freed_mb'] == 4400 - 2500
    assert summary['active_hosts'] == 3


def test_summary_when_wss_needs_every_host():
    rows = [_row('a', 1000, 900), _row('b', 1000, 900)]
    assert api.summary(rows)['emptiable_hosts'] == 0


def test_history_without_samples_draws_nothing():
    assert charts.history({'booked_mb': 4096}, []) is None


def test_history_single_sample_sits_mid_chart():
    sample = {'sampled_at': '2026-11-26T10:00:00Z', 'wss_mb': 1000,
              'target_mb': None, 'current_mb': 2000}
    chart = charts.history({'booked_mb': 4096}, [sample])
    wss = next(s for s in chart['series'] if s['key'] == 'wss_mb')
    target = next(s for s in chart['series'] if s['key'] == 'target_mb')
    assert wss['dots'][0]['x'] == (chart['left'] + chart['right']) / 2
    assert target['dots'] == [] and target['latest_mb'] is None
