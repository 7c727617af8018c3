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

"""memagg-sim's PNG plots comparing memory_basis booked and wss: hosts on
over time, migrations per hour by trigger, overload time and remote
memory; and memagg-sim sweep's settings, hosts saved against
migrations.

Drawn with matplotlib's Agg canvas (no display, no pyplot state).
"""
import json
import os

from matplotlib.backends import backend_agg
from matplotlib import colors
from matplotlib import figure
from matplotlib import patches
from matplotlib import text
import numpy as np

from memagg.sim import series as sim_series

COLOURS = {'booked': '#d62728', 'wss': '#1f77b4'}
FILES = ('active_hosts.png', 'migrations.png', 'overload.png', 'remote.png')


def _save(fig, path):
    backend_agg.FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100)
    return path


def _days(result):
    return np.arange(len(result.active_hosts)) * result.step_s / 86400.0


def active_hosts(results, path):
    """Hosts on at each step, one line per basis."""
    fig = figure.Figure(figsize=(9, 4), layout='constrained')
    ax = fig.add_subplot()
    for basis, result in sorted(results.items()):
        ax.plot(_days(result), result.active_hosts, label=basis,
                color=COLOURS.get(basis), linewidth=1)
    ax.set_xlabel('time (days)')
    ax.set_ylabel('active hosts')
    ax.set_title('Active hosts: packing by booked memory vs working set')
    ax.set_ylim(bottom=0)
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _trigger_colours(triggers):
    """A colour per trigger, the same in every panel."""
    palette = ('#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
               '#17becf', '#bcbd22', '#7f7f7f')
    return {trigger: palette[i % len(palette)]
            for i, trigger in enumerate(sorted(triggers))}


def migrations(results, path):
    """Per basis, migrations per hour over time by trigger (the plan's
    reason), the first round's apart: the first hour shaded and the first
    round's count written there, not in the lines; the steady rate after
    it dashed. The scale is logarithmic above 1 an hour, so that the
    consolidation of the first hours and the steady rate show together.
    Beside it, the totals by trigger, the first round's and the rest."""
    rates = {basis: sim_series.migration_rate(result)
             for basis, result in sorted(results.items())}
    triggers = sorted({trigger for rate in rates.values()
                       for trigger in rate.per_hour})
    colours = _trigger_colours(triggers)
    fig = figure.Figure(figsize=(12, 3.2 * max(len(rates), 1) + 0.6),
                        layout='constrained')
    axes = fig.subplots(max(len(rates), 1), 2, squeeze=False,
                        width_ratios=[4, 1])
    top = max([1.0] + [float(counts.max(initial=0.0))
                       for rate in rates.values()
                       for counts in rate.per_hour.values()])
    for (over_time, totals), (basis, rate) in zip(axes, rates.items()):
        width = rate.bin_hours / 24.0
        edges = np.append(rate.start_days, rate.start_days[-1] + width[-1])
        for trigger in triggers:
            counts = rate.per_hour.get(trigger)
            if counts is not None:
                over_time.stairs(counts, edges, color=colours[trigger],
                                 linewidth=1.2, label=trigger)
        first = sum(rate.first_round.values())
        over_time.axvspan(0, width[0], color='0.85', zorder=0,
                          label='first hour')
        over_time.annotate(
            'first round (step 0): %d migration%s, not in the lines'
            % (first, '' if first == 1 else 's'), (width[0], 0.97),
            xycoords=('data', 'axes fraction'), xytext=(4, 0),
            textcoords='offset points', va='top', fontsize=8)
        over_time.axhline(rate.steady_per_hour, color='black',
                          linestyle='--', linewidth=1,
                          label='steady: %.1f / hour after the first '
                                'round' % rate.steady_per_hour)
        over_time.set_yscale('symlog', linthresh=1.0, linscale=0.5)
        over_time.set_ylim(0, top * 3)
        over_time.set_xlim(0, edges[-1])
        over_time.set_ylabel('migrations / hour')
        over_time.set_title('%s: migrations per hour by trigger' % basis,
                            loc='left', color=COLOURS.get(basis))
        over_time.legend(fontsize=7, loc='upper right')
        over_time.grid(alpha=0.3)
        _totals(totals, rate, triggers, colours, results[basis])
    axes[-1][0].set_xlabel('time (days)')
    return _save(fig, path)


def _totals(ax, rate, triggers, colours, result):
    """Totals by trigger: the first round's (hatched) and the rest."""
    y = np.arange(len(triggers))
    first = [rate.first_round.get(trigger, 0) for trigger in triggers]
    rest = [result.by_trigger.get(trigger, 0) - f
            for trigger, f in zip(triggers, first)]
    colour = [colours[trigger] for trigger in triggers]
    ax.barh(y, first, color=colour, hatch='//', alpha=0.5)
    bars = ax.barh(y, rest, left=first, color=colour)
    ax.bar_label(bars, labels=['%d' % (f + r) for f, r in zip(first, rest)],
                 fontsize=7, padding=2)
    ax.set_yticks(y, [t.replace(':', ':\n') for t in triggers], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel('migrations in all')
    ax.margins(x=0.25)
    ax.legend(handles=[
        patches.Patch(facecolor='0.8', hatch='//', label='first round'),
        patches.Patch(facecolor='0.5', label='after it')],
        fontsize=7, loc='lower right')


def remote(results, path):
    """Remote memory in use over time (working sets running remote,
    solid) and granted (what the grants hold, dashed), per basis."""
    fig = figure.Figure(figsize=(9, 4), layout='constrained')
    ax = fig.add_subplot()
    quiet = []
    for basis, result in sorted(results.items()):
        stats = result.remote
        if stats is None:
            quiet.append('%s: no remote memory simulated' % basis)
            continue
        colour = COLOURS.get(basis)
        days = _days(result)
        ax.plot(days, stats.in_use_mb / 1024.0, color=colour, linewidth=1,
                label='%s: in use' % basis)
        ax.plot(days, stats.granted_mb / 1024.0, color=colour,
                linewidth=1, linestyle='--', label='%s: granted' % basis)
        if not stats.granted_mb.any():
            quiet.append('%s: nothing granted (no host borrowed memory)'
                         % basis)
    if quiet:
        ax.text(0.5, 0.5, '\n'.join(quiet), transform=ax.transAxes,
                ha='center', va='center', fontsize=9, color='0.3')
    ax.set_ylim(bottom=0, top=None if ax.has_data() and any(
        r.remote is not None and r.remote.granted_mb.any()
        for r in results.values()) else 1)
    ax.set_xlabel('time (days)')
    ax.set_ylabel('remote memory (GiB)')
    ax.set_title('Remote memory: in use and granted')
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def overload(results, path):
    """Hosts in memory and cpu overload over time (lines) and the share
    of host time overloaded (bars)."""
    fig = figure.Figure(figsize=(11, 4), layout='constrained')
    over_time, shares = fig.subplots(1, 2, width_ratios=[3, 1])
    labels, values, colours = [], [], []
    for basis, result in sorted(results.items()):
        colour = COLOURS.get(basis)
        days = _days(result)
        over_time.plot(days, result.mem_overloaded, color=colour,
                       linewidth=1, label='%s: memory' % basis)
        over_time.plot(days, result.cpu_overloaded, color=colour,
                       linewidth=1, linestyle=':', label='%s: cpu' % basis)
        on = result.active_hosts.sum()
        for kind, series in (('memory', result.mem_overloaded),
                             ('cpu', result.cpu_overloaded)):
            labels.append('%s\n%s' % (basis, kind))
            values.append(100.0 * series.sum() / on if on else 0.0)
            colours.append(colour)
    # A run with no overload still gets a readable axis from 0.
    over_time.set_ylim(0, max([1] + [int(r.mem_overloaded.max(initial=0))
                                     for r in results.values()]
                              + [int(r.cpu_overloaded.max(initial=0))
                                 for r in results.values()]) * 1.1)
    over_time.set_xlabel('time (days)')
    over_time.set_ylabel('hosts in overload')
    over_time.set_title('Hosts whose VMs need more than they have')
    over_time.legend(fontsize=8)
    over_time.grid(alpha=0.3)
    bars = shares.bar(range(len(values)), values, color=colours)
    shares.bar_label(bars, fmt='%.3g', fontsize=8)
    shares.set_ylim(0, max(values + [0.01]) * 1.2)
    shares.set_xticks(range(len(values)), labels, fontsize=8)
    shares.set_ylabel('% of active host time')
    shares.set_title('Overload time')
    return _save(fig, path)


def write_all(results, output_dir):
    """The PNGs of FILES in ``output_dir``; their paths."""
    return [draw(results, os.path.join(output_dir, name))
            for draw, name in zip((active_hosts, migrations, overload,
                                   remote), FILES)]


def setting_label(options, swept):
    """A sweep setting's point label: its value of each option of
    ``swept`` (names), one a line, a JSON object's keys written out
    (``cpu_threshold=0.6`` for placement_params {"cpu_threshold": 0.6})."""
    lines = []
    for name in swept:
        text = options[name]
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and value:
            lines.extend('%s=%s' % (key, json.dumps(item, sort_keys=True))
                         for key, item in sorted(value.items()))
        else:
            lines.append('%s=%s' % (name, text))
    return '\n'.join(lines)


def sweep(rows, reference, path):
    """memagg-sim sweep's settings (its table's rows): hosts saved against
    migrations per VM per day, means over the traces with their standard
    deviations as error bars, each labelled with its values of the options
    that differ between settings (setting_label), coloured by overload
    (memory + cpu share of host time) on a scale from the least to the most
    of it (one colour, and a note, when every setting had the same); the
    Pareto front's points outlined and joined, and the booked reference's
    migrations per VM per day (``reference['mean']``) as a vertical line
    (its hosts saved are 0 by definition: a point there would squeeze the
    settings together)."""
    fig = figure.Figure(figsize=(10, 7), layout='constrained')
    ax = fig.add_subplot()
    means = [row['mean'] for row in rows]
    sds = [row['sd'] for row in rows]
    x = np.array([mean['migrations_per_vm_day'] for mean in means])
    y = np.array([mean['hosts_saved_pct'] for mean in means])
    overload = np.array([mean['memory_overload_pct']
                         + mean['cpu_overload_pct'] for mean in means])
    front = np.array([row['pareto'] for row in rows])
    ax.errorbar(x, y, xerr=[sd['migrations_per_vm_day'] for sd in sds],
                yerr=[sd['hosts_saved_pct'] for sd in sds], fmt='none',
                ecolor='0.75', elinewidth=1, zorder=1)
    edges = dict(edgecolors=np.where(front, 'black', 'none'),
                 linewidths=1.5, zorder=3, s=60)
    if overload.max() > overload.min():
        points = ax.scatter(x, y, c=overload, cmap='viridis',
                            norm=colors.Normalize(overload.min(),
                                                  overload.max()), **edges)
        fig.colorbar(points, ax=ax,
                     label='overload, % of active host time (memory + cpu)')
    else:
        ax.scatter(x, y, color='#1f77b4', label='overload (memory + cpu): '
                   '%.3g %% of active host time at every setting'
                   % overload[0], **edges)
    order = np.argsort(x[front], kind='stable')
    ax.plot(x[front][order], y[front][order], color='black',
            linestyle='--', linewidth=1, zorder=2,
            label='Pareto front (outlined), in order of migrations')
    names = list(rows[0]['options']) if rows else []
    swept = [name for name in names
             if len({row['options'][name] for row in rows}) > 1] or names
    booked = reference['mean']['migrations_per_vm_day']
    ax.axvline(booked, color=COLOURS['booked'], linestyle=':', linewidth=1,
               label='booked reference: %.3g migrations per VM per day'
               % booked)
    # Storms and caps put migrations orders of magnitude apart.
    spread = np.append(x, booked)
    if spread.min() > 0 and spread.max() >= 10 * spread.min():
        ax.set_xscale('log')
    ax.margins(x=0.12, y=0.08)
    ax.set_xlabel('migrations per VM per day')
    ax.set_ylabel('hosts saved, % of the booked reference\'s active hosts')
    ax.set_title('Sweep: hosts saved against migrations (mean over the '
                 'traces)')
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _label(fig, ax, x, y, [setting_label(row['options'], swept)
                           for row in rows])
    return _save(fig, path)


#: Where _label tries a label, in points from its point: nearest first.
_PLACES = [(dx * r, dy * r) for r in (1, 2, 3, 4, 6, 8, 11, 15)
           for dx, dy in ((6, 4), (6, -4), (-6, 4), (-6, -4), (0, 8),
                          (0, -8), (8, 0), (-8, 0))]


def _label(fig, ax, x, y, labels):
    """Each point's label beside it, at the nearest of _PLACES where it
    overlaps no label placed before, the legend or the axes' edge (joined
    to its point by a line when away from it); where none is free, at the
    nearest."""
    canvas = backend_agg.FigureCanvasAgg(fig)
    canvas.draw()
    # The layout is set: labels placed now must not move it.
    fig.set_layout_engine('none')
    renderer = canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken = [ax.get_legend().get_window_extent(renderer)]
    for xi, yi, label in zip(x, y, labels):
        for i, (dx, dy) in enumerate(_PLACES + [_PLACES[0]]):
            note = ax.annotate(
                label, (xi, yi), textcoords='offset points', xytext=(dx, dy),
                fontsize=7, linespacing=1.0,
                ha='left' if dx > 0 else 'right' if dx < 0 else 'center',
                va='bottom' if dy > 0 else 'top' if dy < 0 else 'center',
                arrowprops=None if abs(dx) + abs(dy) <= 10 else dict(
                    arrowstyle='-', color='0.6', linewidth=0.5))
            # The text's box: an annotation's own takes in its line.
            note.update_positions(renderer)
            box = text.Text.get_window_extent(note, renderer)
            inside = (frame.x0 <= box.x0 and box.x1 <= frame.x1
                      and frame.y0 <= box.y0 and box.y1 <= frame.y1)
            if i == len(_PLACES) or (inside and not any(
                    box.overlaps(other) for other in taken)):
                taken.append(box)
                break
            note.remove()
