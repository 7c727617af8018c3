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
Times are UTC, as the API gives them.
"""
import datetime
import math

from django.utils import dateparse

# A host's compact bar, one thin line per figure in this order, and their
# colours.
HOST_BARS = (
    ('memory_mb', 'Physical memory', '#5f6b7a'),
    ('booked_mb', 'Booked', '#1f77b4'),
    ('wss_maxavg_mb', 'Σ WSS^maxavg', '#2ca02c'),
    ('lent_mb', 'Lent (remote)', '#ff7f0e'),
    ('borrowed_mb', 'Borrowed (remote)', '#9467bd'),
    ('free_reservoir_mb', 'Free reservoir', '#17becf'),
)
# An instance's series over time: the key in each point, label, colour.
HISTORY_SERIES = (
    ('booked_mb', 'Booked', '#1f77b4'),
    ('target_mb', 'Balloon target', '#d62728'),
    ('wss_mb', 'WSS', '#bcbd22'),
    ('wss_maxavg_mb', 'WSS^maxavg', '#2ca02c'),
    ('remote_mb', 'Remote', '#9467bd'),
    ('reclaimed_mb', 'Reclaimed by the host', '#e377c2'),
)
# The cloud over time: memory, then hosts.
CLOUD_MEMORY_SERIES = (
    ('booked_mb', 'Booked', '#1f77b4'),
    ('wss_maxavg_mb', 'Σ WSS^maxavg', '#2ca02c'),
    ('freed_mb', 'Memory freed', '#ff7f0e'),
)
CLOUD_HOST_SERIES = (
    ('hosts', 'Hosts reporting', '#5f6b7a'),
    ('hosts_needed', 'Hosts needed', '#1f77b4'),
    ('emptiable_hosts', 'Hosts that could be emptied', '#d62728'),
)
# The time ranges a chart offers, by the query value that picks them.
RANGES = {
    '1h': datetime.timedelta(hours=1),
    '6h': datetime.timedelta(hours=6),
    '1d': datetime.timedelta(days=1),
    '7d': datetime.timedelta(days=7),
}
# Time-axis steps, the first that leaves at most MAX_TICKS ticks wins.
_TICK_STEPS = tuple(datetime.timedelta(minutes=m) for m in (
    1, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880))
MAX_TICKS = 8

BAR_LINE = 4
BAR_GAP = 1
BAR_WIDTH = 240
CHART_WIDTH = 760
CHART_HEIGHT = 280
MARGIN = {'left': 80, 'right': 20, 'top': 20, 'bottom': 60}
LEGEND_STEP = 110


def nice_ceiling(value):
    """The smallest 1, 2 or 5 times a power of ten at or above ``value``
    (at least 1), so an axis ends on a round number."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10)
                if step * power >= value)


def host_scale(rows):
    """The scale, MiB, every host bar of a page is drawn on, so the rows
    compare at a glance."""
    return nice_ceiling(max([row[key] for row in rows
                             for key, _, _ in HOST_BARS] or [1]))


def host_bar(row, scale):
    """The compact bar of one host row (a usage of GET /v1/host_usages):
    a thin line per HOST_BARS figure on ``scale`` MiB."""
    lines = [{'key': key, 'label': label, 'colour': colour,
              'mb': row[key], 'y': n * (BAR_LINE + BAR_GAP),
              'width': round(BAR_WIDTH * row[key] / scale, 1)}
             for n, (key, label, colour) in enumerate(HOST_BARS)]
    return {'host': row['host'], 'lines': lines, 'width': BAR_WIDTH,
            'line': BAR_LINE, 'scale_mb': scale,
            'height': len(HOST_BARS) * (BAR_LINE + BAR_GAP) - BAR_GAP}


def time_ticks(start, end):
    """Labelled ticks of a time axis from ``start`` to ``end``
    (datetimes): on round minutes, hours or days, at most MAX_TICKS;
    the label names the day once the range passes a day."""
    span = end - start
    step = next((s for s in _TICK_STEPS if span / s <= MAX_TICKS),
                _TICK_STEPS[-1])
    epoch = datetime.datetime(2000, 1, 1, tzinfo=start.tzinfo)
    first = epoch + math.ceil((start - epoch) / step) * step
    fmt = '%H:%M' if span <= datetime.timedelta(days=1) else '%d %b %H:%M'
    ticks = []
    at = first
    while at <= end:
        ticks.append({'at': at, 'label': at.strftime(fmt)})
        at += step
    return ticks


def time_chart(points, series, start, end, unit='MiB'):
    """A line chart of ``points`` (dicts with a datetime ``at`` and a
    value, or None, per key of ``series``: (key, label, colour)) from
    ``start`` to ``end``: lines, dots, a y axis in ``unit`` and a
    time axis; None without points."""
    if not points:
        return None
    top = nice_ceiling(max(p[key] or 0 for p in points
                           for key, _, _ in series))
    span = (end - start).total_seconds() or 1
    plot_w = CHART_WIDTH - MARGIN['left'] - MARGIN['right']
    plot_h = CHART_HEIGHT - MARGIN['top'] - MARGIN['bottom']

    def x(at):
        return round(MARGIN['left'] + plot_w * min(max(
            (at - start).total_seconds() / span, 0), 1), 1)

    def y(value):
        return round(MARGIN['top'] + plot_h * (1 - value / top), 1)

    lines = []
    for n, (key, label, colour) in enumerate(series):
        dots = [{'x': x(p['at']), 'y': y(p[key]), 'mb': p[key],
                 'at': p['label']}
                for p in points if p[key] is not None]
        lines.append({
            'key': key, 'label': label, 'colour': colour, 'dots': dots,
            'points': ' '.join('%s,%s' % (d['x'], d['y']) for d in dots),
            'latest_mb': dots[-1]['mb'] if dots else None,
            'legend_x': MARGIN['left'] + n * LEGEND_STEP,
        })
    bottom = CHART_HEIGHT - MARGIN['bottom']
    return {
        'width': CHART_WIDTH, 'height': CHART_HEIGHT, 'series': lines,
        'left': MARGIN['left'], 'right': CHART_WIDTH - MARGIN['right'],
        'top': MARGIN['top'], 'bottom': bottom, 'unit': unit,
        'y_ticks': [{'y': y(top * f / 4), 'value': round(top * f / 4)}
                    for f in range(5)],
        'x_ticks': [dict(t, x=x(t['at'])) for t in time_ticks(start, end)],
        'axis_label_y': bottom + 32, 'legend_y': CHART_HEIGHT - 6,
        'mid_x': (MARGIN['left'] + CHART_WIDTH - MARGIN['right']) / 2,
    }


def parse_time(text):
    """An API time string as an aware datetime."""
    return dateparse.parse_datetime(text)


def _remote_at(grants, at):
    """MiB the instance's ``grants`` lent it at ``at``: each from its
    creation, until its last change once it ended."""
    total = 0
    for grant in grants:
        ended = grant['status'] in ('released', 'failed')
        if parse_time(grant['created_at']) <= at and not (
                ended and parse_time(grant['updated_at'] or
                                     grant['created_at']) <= at):
            total += grant['granted_mb']
    return total


def history(instance, samples, start, end, grants=None):
    """The instance's memory from ``start`` to ``end`` over the
    ``samples`` of GET /v1/instances/{uuid}/wss (oldest first): booked,
    balloon target, WSS, WSS^maxavg and host-reclaimed memory, and the
    remote memory its ``grants`` lent (None: not known to the user,
    not drawn). None without samples."""
    points = []
    for sample in samples:
        at = parse_time(sample['sampled_at'])
        point = {key: sample.get(key) for key, _, _ in HISTORY_SERIES}
        point.update(at=at, label=sample['sampled_at'],
                     booked_mb=instance['booked_mb'],
                     remote_mb=(None if grants is None
                                else _remote_at(grants, at)))
        points.append(point)
    return time_chart(points, HISTORY_SERIES, start, end)


def cloud(history_points, start, end):
    """The cloud's two charts over the points of GET /v1/cloud_usage:
    memory, then hosts; None for each without points."""
    points = [dict(p, at=parse_time(p['at']), label=p['at'])
              for p in history_points]
    return (time_chart(points, CLOUD_MEMORY_SERIES, start, end),
            time_chart(points, CLOUD_HOST_SERIES, start, end,
                       unit='hosts'))
