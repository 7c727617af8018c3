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
over time, migrations by trigger, and overload time.

Drawn with matplotlib's Agg canvas (no display, no pyplot state).
"""
import os

from matplotlib.backends import backend_agg
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
