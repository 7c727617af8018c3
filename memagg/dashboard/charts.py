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

"""The geometry of the panels' charts, drawn as inline SVG by the
templates.

Computed on the server so a page needs no chart library and nothing from a
CDN (Horizon is often installed where the browser cannot reach the
internet). Every mark carries the number it stands for (``mb``; the
templates put it in a ``data-mb`` attribute and a ``<title>``), so a
reader hovering, or a test, sees the API's figure and not a pixel count.
"""
import math

from django.utils import dateparse

# The host bars, in the order they are drawn, and their colours.
HOST_BARS = (
    ('memory_mb', 'Physical memory', '#5f6b7a'),
    ('booked_mb', 'Booked', '#1f77b4'),
    ('wss_maxavg_mb', 'Σ WSS^maxavg', '#2ca02c'),
    ('lent_mb', 'Lent (remote)', '#ff7f0e'),
    ('borrowed_mb', 'Borrowed (remote)', '#9467bd'),
    ('free_reservoir_mb', 'Free reservoir', '#17becf'),
)
# An instance's series over time: the key in each sample (booked_mb is the
# instance's, the same in every sample), label and colour.
HISTORY_SERIES = (
    ('booked_mb', 'Booked', '#1f77b4'),
    ('target_mb', 'Balloon target', '#d62728'),
    ('wss_mb', 'Estimated WSS', '#2ca02c'),
)

BAR_HEIGHT = 16
BAR_GAP = 6
LABEL_WIDTH = 150
PLOT_WIDTH = 420
VALUE_WIDTH = 110
CHART_WIDTH = 640
CHART_HEIGHT = 260
MARGIN = {'left': 70, 'right': 20, 'top': 20, 'bottom': 40}


def nice_ceiling(value):
    """The smallest 1, 2 or 5 times a power of ten at or above ``value``
    (at least 1), so an axis ends on a round number."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10)
                if step * power >= value)


def host_bars(rows):
    """One bar chart per host row (memagg.dashboard.api.host_rows), all on
    the same scale so hosts compare at a glance."""
    scale = nice_ceiling(max([row[key] for row in rows
                              for key, _, _ in HOST_BARS] or [1]))
    charts = []
    for row in rows:
        bars = []
        for n, (key, label, colour) in enumerate(HOST_BARS):
            bars.append({
                'key': key, 'label': label, 'colour': colour,
                'mb': row[key],
                'y': n * (BAR_HEIGHT + BAR_GAP),
                'width': round(PLOT_WIDTH * row[key] / scale, 1),
            })
        charts.append({
            'host': row['host'], 'bars': bars,
            'height': len(HOST_BARS) * (BAR_HEIGHT + BAR_GAP),
        })
    return {'charts': charts, 'scale_mb': scale,
            'label_width': LABEL_WIDTH, 'plot_width': PLOT_WIDTH,
            'width': LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH,
            'value_x': LABEL_WIDTH + PLOT_WIDTH + 6,
            'bar_height': BAR_HEIGHT}


def history(instance, samples):
    """A line chart of the instance's booked memory, balloon target and
    estimated WSS over the ``samples`` of GET /v1/instances/{uuid}/wss
    (oldest first); None without samples."""
    if not samples:
        return None
    points = [dict(s, booked_mb=instance['booked_mb'],
                   at=dateparse.parse_datetime(s['sampled_at']))
              for s in samples]
    top = nice_ceiling(max(p[key] or 0 for p in points
                           for key, _, _ in HISTORY_SERIES))
    start, end = points[0]['at'], points[-1]['at']
    span = (end - start).total_seconds() or 1
    plot_w = CHART_WIDTH - MARGIN['left'] - MARGIN['right']
    plot_h = CHART_HEIGHT - MARGIN['top'] - MARGIN['bottom']

    def x(point):
        offset = (point['at'] - start).total_seconds() / span
        # A single sample sits in the middle, not on the axis.
        return round(MARGIN['left'] + plot_w * (offset if len(points) > 1
                                                else 0.5), 1)

    def y(mb):
        return round(MARGIN['top'] + plot_h * (1 - mb / top), 1)

    series = []
    for key, label, colour in HISTORY_SERIES:
        dots = [{'x': x(p), 'y': y(p[key]), 'mb': p[key],
                 'at': p['sampled_at']}
                for p in points if p[key] is not None]
        series.append({
            'key': key, 'label': label, 'colour': colour, 'dots': dots,
            'points': ' '.join('%s,%s' % (d['x'], d['y']) for d in dots),
            'latest_mb': dots[-1]['mb'] if dots else None,
        })
    return {
        'width': CHART_WIDTH, 'height': CHART_HEIGHT, 'series': series,
        'left': MARGIN['left'], 'right': CHART_WIDTH - MARGIN['right'],
        'top': MARGIN['top'], 'bottom': CHART_HEIGHT - MARGIN['bottom'],
        'y_ticks': [{'y': y(top * f / 4), 'mb': round(top * f / 4)}
                    for f in range(5)],
        'start': samples[0]['sampled_at'], 'end': samples[-1]['sampled_at'],
        'legend_y': CHART_HEIGHT - 8,
    }
