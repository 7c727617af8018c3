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

"""The charts' scales, time axes and series."""
import datetime

import pytest

from memagg.dashboard import charts

UTC = datetime.timezone.utc
T0 = datetime.datetime(2026, 11, 26, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize('value, ceiling', [
    (0, 1), (1, 1), (3, 5), (10, 10), (11, 20), (65536, 100000),
    (4096, 5000), (1999, 2000)])
def test_nice_ceiling(value, ceiling):
    assert charts.nice_ceiling(value) == ceiling


def _row(host, memory, booked=0, lent=0):
    return dict(host=host, memory_mb=memory, booked_mb=booked,
                wss_maxavg_mb=booked // 2, lent_mb=lent, borrowed_mb=0,
                free_reservoir_mb=0)


def test_host_bars_share_the_page_scale():
    rows = [_row('a', 1000, 900), _row('b', 4000, 6000, lent=256)]
    scale = charts.host_scale(rows)
    bar = charts.host_bar(rows[1], scale)

    assert scale == 10000
    assert [(line['key'], line['mb'], line['width']) for line in
            bar['lines']][:4] == [('memory_mb', 4000, 96.0),
                                  ('booked_mb', 6000, 144.0),
                                  ('wss_maxavg_mb', 3000, 72.0),
                                  ('lent_mb', 256, 6.1)]
    # Thin lines, one under the other: the whole bar stays one row high.
    assert bar['height'] < 32


@pytest.mark.parametrize('length, step, fmt', [
    (datetime.timedelta(hours=1), 10, '%H:%M'),
    (datetime.timedelta(hours=6), 60, '%H:%M'),
    (datetime.timedelta(days=1), 180, '%H:%M'),
    (datetime.timedelta(days=7), 1440, '%d %b %H:%M')])
def test_time_ticks_fall_on_round_times(length, step, fmt):
    start = T0 + datetime.timedelta(minutes=7, seconds=30)
    ticks = charts.time_ticks(start, start + length)

    assert 3 <= len(ticks) <= charts.MAX_TICKS
    assert all(start <= t['at'] <= start + length for t in ticks)
    assert all(t['at'].second == 0 and
               (t['at'].hour * 60 + t['at'].minute) % step == 0
               for t in ticks)
    assert ticks[0]['label'] == ticks[0]['at'].strftime(fmt)


def _sample(minute, wss, target=None, reclaimed=None):
    return {'sampled_at': (T0 + datetime.timedelta(minutes=minute))
            .strftime('%Y-%m-%dT%H:%M:%SZ'), 'wss_mb': wss,
            'wss_maxavg_mb': wss + 100, 'target_mb': target,
            'current_mb': 2000, 'reclaimed_mb': reclaimed}


def test_history_without_samples_draws_nothing():
    assert charts.history({'booked_mb': 4096}, [], T0, T0) is None


def test_history_spans_the_range_chosen():
    end = T0 + datetime.timedelta(hours=1)
    chart = charts.history({'booked_mb': 4096},
                           [_sample(30, 1000), _sample(60, 1200, 1500, 64)],
                           T0, end)
    series = {s['key']: s for s in chart['series']}

    # Half-way through the hour is half-way across the plot.
    assert series['wss_mb']['dots'][0]['x'] == (chart['left'] +
                                                chart['right']) / 2
    assert series['wss_mb']['dots'][1]['x'] == chart['right']
    assert series['wss_maxavg_mb']['latest_mb'] == 1300
    assert [d['mb'] for d in series['target_mb']['dots']] == [1500]
    assert [d['mb'] for d in series['reclaimed_mb']['dots']] == [64]
    # Remote memory is drawn only when the grants are known.
    assert series['remote_mb']['dots'] == []
    assert [t['label'] for t in chart['x_ticks']] == [
        '10:00', '10:10', '10:20', '10:30', '10:40', '10:50', '11:00']


def test_remote_memory_follows_the_grants():
    grants = [
        {'created_at': '2026-11-26T10:10:00Z', 'updated_at': None,
         'status': 'active', 'granted_mb': 256},
        {'created_at': '2026-11-26T10:05:00Z',
         'updated_at': '2026-11-26T10:20:00Z', 'status': 'released',
         'granted_mb': 128}]
    chart = charts.history({'booked_mb': 4096},
                           [_sample(m, 1000) for m in (0, 6, 15, 30)],
                           T0, T0 + datetime.timedelta(hours=1), grants)
    remote = next(s for s in chart['series'] if s['key'] == 'remote_mb')

    assert [d['mb'] for d in remote['dots']] == [0, 128, 384, 256]


def test_cloud_charts_memory_then_hosts():
    points = [dict(at='2026-11-26T10:00:00Z', hosts=3, booked_mb=9000,
                   wss_maxavg_mb=3000, freed_mb=6000, hosts_needed=1,
                   emptiable_hosts=2)]
    memory, hosts = charts.cloud(points, T0,
                                 T0 + datetime.timedelta(days=1))

    assert [s['latest_mb'] for s in memory['series']] == [9000, 3000, 6000]
    assert [s['latest_mb'] for s in hosts['series']] == [3, 1, 2]
    assert hosts['unit'] == 'hosts'
    assert charts.cloud([], T0, T0) == (None, None)
