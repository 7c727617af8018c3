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
over time, migrations by trigger, and overload time; and memagg-sim
sweep's settings, hosts saved against migrations.

Drawn with matplotlib's Agg canvas (no display, no pyplot state).
"""
import os

from matplotlib.backends import backend_agg
from matplotlib import colors
from matplotlib import figure
import numpy as np

COLOURS = {'booked': '#d62728', 'wss': '#1f77b4'}
FILES = ('active_hosts.png', 'migrations.png', 'overload.png')


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


def migrations(results, path):
    """Migrations by trigger (the plan's reason), bars side by side per
    basis."""
    triggers = sorted({reason for result in results.values()
                       for reason in result.by_trigger}) or ['(none)']
    fig = figure.Figure(figsize=(9, 4), layout='constrained')
    ax = fig.add_subplot()
    width = 0.8 / max(len(results), 1)
    x = np.arange(len(triggers))
    for i, (basis, result) in enumerate(sorted(results.items())):
        counts = [result.by_trigger.get(reason, 0) for reason in triggers]
        bars = ax.bar(x + i * width, counts, width, label=basis,
                      color=COLOURS.get(basis))
        ax.bar_label(bars, fontsize=8)
    ax.set_xticks(x + width * (len(results) - 1) / 2, triggers)
    ax.set_ylabel('migrations')
    ax.set_title('Migrations by trigger')
    ax.legend()
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
    """The three PNGs in ``output_dir``; their paths."""
    return [draw(results, os.path.join(output_dir, name))
            for draw, name in zip((active_hosts, migrations, overload),
                                  FILES)]


def sweep(rows, reference, path):
    """memagg-sim sweep's settings (its table's rows): hosts saved against
    migrations, means over the seeds with their standard deviations as
    error bars, coloured by overload (memory + cpu share of host time),
    each numbered as its row; the Pareto front's points outlined and
    joined, and the booked reference's migrations (``reference['mean']``)
    as a vertical line (its hosts saved are 0 by definition: a point
    there would squeeze the settings together)."""
    fig = figure.Figure(figsize=(9, 6), layout='constrained')
    ax = fig.add_subplot()
    means = [row['mean'] for row in rows]
    sds = [row['sd'] for row in rows]
    x = np.array([mean['migrations'] for mean in means])
    y = np.array([mean['hosts_saved_pct'] for mean in means])
    overload = np.array([mean['memory_overload_pct']
                         + mean['cpu_overload_pct'] for mean in means])
    front = np.array([row['pareto'] for row in rows])
    ax.errorbar(x, y, xerr=[sd['migrations'] for sd in sds],
                yerr=[sd['hosts_saved_pct'] for sd in sds], fmt='none',
                ecolor='0.75', elinewidth=1, zorder=1)
    # A sweep without overload still gets a colour scale from 0.
    norm = colors.Normalize(0, max(overload.max(), 1e-3))
    points = ax.scatter(x, y, c=overload, cmap='viridis', norm=norm, s=60,
                        edgecolors=np.where(front, 'black', 'none'),
                        linewidths=1.5, zorder=3)
    fig.colorbar(points, ax=ax,
                 label='overload, % of active host time (memory + cpu)')
    order = np.argsort(x[front], kind='stable')
    ax.plot(x[front][order], y[front][order], color='black',
            linestyle='--', linewidth=1, zorder=2,
            label='Pareto front (outlined), in order of migrations')
    for row, xi, yi in zip(rows, x, y):
        ax.annotate(str(row['setting']), (xi, yi), textcoords='offset points',
                    xytext=(5, 4), fontsize=8)
    booked = reference['mean']['migrations']
    ax.axvline(booked, color=COLOURS['booked'], linestyle=':', linewidth=1,
               label='booked reference: %.0f migrations' % booked)
    # Storms and caps put migrations orders of magnitude apart.
    spread = np.append(x, booked)
    if spread.min() > 0 and spread.max() >= 10 * spread.min():
        ax.set_xscale('log')
    ax.set_xlabel('migrations (total over the trace)')
    ax.set_ylabel('hosts saved, % of the booked reference\'s active hosts')
    ax.set_title('Sweep: hosts saved against migrations (mean over seeds)')
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, path)
