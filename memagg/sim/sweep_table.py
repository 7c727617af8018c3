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

"""memagg-sim sweep's table: the figures of each setting on each trace
against the booked reference, their means over the traces, the Pareto
front, and the table as sweep.csv and as text (memagg.sim.sweep runs the
simulations)."""
import csv
import statistics

from memagg.sim import report

#: A trace's figures of a setting: name -> (table heading, format).
FIGURES = {
    'hosts_saved_pct': ('hosts saved %', '%.1f'),
    'active_hosts': ('active hosts', '%.1f'),
    'migrations': ('migrations', '%.0f'),
    'migrations_per_vm_day': ('migr/VM/day', '%.3f'),
    'migrations_vs_booked': ('x booked migr', '%.2f'),
    'memory_triggered_pct': ('mem-triggered %', '%.1f'),
    'memory_overload_pct': ('mem overload %', '%.3f'),
    'cpu_overload_pct': ('cpu overload %', '%.3f'),
    'remote_pct': ('partly remote %', '%.3f'),
    'grant_churn': ('grant churn', '%.0f'),
}


def figures(summary, reference, days=None):
    """One trace's figures (FIGURES) of a basis summary, against the booked
    reference's summary of the same trace, which has ``days`` VM-days
    (None: per VM-day figures are 0)."""
    migrations = summary['migrations']
    total = migrations['total']
    # Reasons are overload:<dims> or underload:<dims> (plans.Action).
    by_memory = sum(count for reason, count
                    in migrations['by_trigger'].items()
                    if reason.startswith('overload:') and 'memory' in reason)
    active = summary['active_hosts']['mean']
    remote = summary.get('remote')
    return {
        'hosts_saved_pct': 100 * report.hosts_saved_ratio(
            reference['active_hosts']['mean'], active),
        'active_hosts': active,
        'migrations': total,
        'migrations_per_vm_day': total / days if days else 0.0,
        'migrations_vs_booked': (total / reference['migrations']['total']
                                 if reference['migrations']['total']
                                 else 0.0),
        'memory_triggered_pct': 100 * by_memory / total if total else 0.0,
        'memory_overload_pct': 100 * summary['memory_overload']['fraction'],
        'cpu_overload_pct': 100 * summary['cpu_overload']['fraction'],
        'remote_pct': (100 * remote['partly_remote']['vm_fraction']
                       if remote else 0.0),
        'grant_churn': remote['grants']['churn'] if remote else 0,
    }


def key(label):
    """A trace's label as sweep.json keys it: a seed as text, a sole trace
    file (None) as null."""
    return 'null' if label is None else str(label)


def spread(per_seed):
    """Mean and standard deviation over the traces of each figure, and
    the figures of each trace, keyed by key(label)."""
    mean, sd = {}, {}
    for name in FIGURES:
        values = [seed_figures[name] for seed_figures in per_seed.values()]
        mean[name] = statistics.fmean(values)
        sd[name] = statistics.stdev(values) if len(values) > 1 else 0.0
    return {'mean': mean, 'sd': sd,
            'seeds': {key(label): values
                      for label, values in per_seed.items()}}


def _objectives(row):
    """What the front minimises: hosts saved negated, migrations per VM
    per day (so that traces of different sizes weigh alike), overload
    (memory + cpu) and the time VMs ran partly remote, each the mean over
    the traces. Remote memory keeps a host short of memory out of overload,
    but not for free: a setting leaning on it is no better for that."""
    mean = row['mean']
    return (-mean['hosts_saved_pct'], mean['migrations_per_vm_day'],
            mean['memory_overload_pct'] + mean['cpu_overload_pct'],
            mean['remote_pct'])


def pareto_front(rows):
    """For each row (with the FIGURES means in ``row['mean']``), whether
    no other row is at least as good in hosts saved, migrations, overload
    (memory + cpu) and time partly remote, and better in one of them."""
    scores = [_objectives(row) for row in rows]
    return [not any(other != mine
                    and all(o <= m for o, m in zip(other, mine))
                    for other in scores)
            for mine in scores]


def table(grid_settings, reference, results, days=None):
    """The sweep's rows: per setting of ``grid_settings`` (sweep.settings
    of the grid), its options as given, figures per trace, their mean and
    sd, and whether it is on the front. ``reference`` maps a trace's label
    (a seed's is the seed) -> the booked summary; ``results`` is per
    setting a dict label -> its summary; ``days`` maps a label to its
    trace's VM-days."""
    days = days or {}
    rows = []
    for number, (values, by_seed) in enumerate(
            zip(grid_settings, results), 1):
        row = {'setting': number,
               'options': {name: text for name, (text, _) in values.items()}}
        row.update(spread({seed: figures(summary, reference[seed],
                                         days.get(seed))
                           for seed, summary in by_seed.items()}))
        rows.append(row)
    for row, on_front in zip(rows, pareto_front(rows)):
        row['pareto'] = on_front
    return rows


def write_csv(rows, names, path):
    """sweep.csv: setting, the options swept (``names``), each figure's
    mean and sd, pareto (yes or no)."""
    with open(path, 'w', newline='') as stream:
        out = csv.writer(stream)
        out.writerow(['setting'] + names
                     + [column for name in FIGURES
                        for column in (name, name + '_sd')]
                     + ['pareto'])
        for row in rows:
            out.writerow([row['setting']]
                         + [row['options'][name] for name in names]
                         + [value for name in FIGURES
                            for value in (row['mean'][name],
                                          row['sd'][name])]
                         + ['yes' if row['pareto'] else 'no'])
    return path


def _cell(figure, mean, sd, spread):
    form = FIGURES[figure][1]
    return (form + ' ±' + form) % (mean, sd) if spread else form % mean


def _over(sources):
    """What the means are over: the seeds and trace files of
    ``sources`` (labels: a seed, or a trace's name)."""
    seeds = [str(label) for label in sources if isinstance(label, int)]
    files = [label for label in sources if not isinstance(label, int)]
    parts = (['seed%s %s' % ('s' if len(seeds) > 1 else '', ', '.join(seeds))]
             if seeds else [])
    parts += (['trace%s %s' % ('s' if len(files) > 1 else '',
                               ', '.join(files))] if files else [])
    if len(sources) > 1:
        return 'mean ±sd over %s' % ' and '.join(parts)
    return 'one trace' if sources == [None] else parts[0]


#: The figures of each trace a sweep over several traces prints.
TRACE_FIGURES = ('hosts_saved_pct', 'migrations_per_vm_day',
                 'migrations_vs_booked', 'memory_overload_pct',
                 'cpu_overload_pct')


def _columns(header, body, left):
    """Lines of ``header`` and ``body`` in columns, the first ``left``
    aligned left and the others right."""
    widths = [max(len(line[i]) for line in [header] + body)
              for i in range(len(header))]
    return ['  '.join(cell.ljust(width) if i < left else cell.rjust(width)
                      for i, (cell, width)
                      in enumerate(zip(line, widths))).rstrip()
            for line in [header] + body]


def per_trace(rows, names, sources):
    """Each trace's figures (TRACE_FIGURES) of each setting, for a sweep
    over several traces, where means hide the trace a setting fails on."""
    header = (['trace', '#'] + names
              + [FIGURES[name][0] for name in TRACE_FIGURES])
    body = [['seed %d' % label if isinstance(label, int) else str(label),
             str(row['setting'])]
            + [row['options'][name] for name in names]
            + [FIGURES[name][1] % row['seeds'][key(label)][name]
               for name in TRACE_FIGURES]
            for label in sources for row in rows]
    return _columns(header, body, 2 + len(names))


def text(rows, names, reference, seeds):
    """The table for a terminal, after a line on the booked reference;
    over several traces, each trace's figures after it. ``seeds``: the
    traces' labels (a seed, a trace file's name, or None for the one
    trace file)."""
    spread = len(seeds) > 1
    over = _over(seeds)
    lines = ['booked reference: active hosts %s, migrations %s, memory '
             'overload %s%%, cpu overload %s%% (%s)'
             % tuple([_cell(name, reference['mean'][name],
                            reference['sd'][name], spread)
                      for name in ('active_hosts', 'migrations',
                                   'memory_overload_pct',
                                   'cpu_overload_pct')] + [over])]
    header = ['#'] + names + [heading for heading, _ in FIGURES.values()]
    header.append('front')
    body = [[str(row['setting'])] + [row['options'][name] for name in names]
            + [_cell(name, row['mean'][name], row['sd'][name], spread)
               for name in FIGURES]
            + ['*' if row['pareto'] else '']
            for row in rows]
    lines += _columns(header, body, 1 + len(names))
    lines.append('front: * on the Pareto front of hosts saved, migrations '
                 'per VM per day, overload (memory + cpu) and time partly '
                 'remote')
    if spread and any(not isinstance(label, int) for label in seeds):
        lines.append('each trace:')
        lines += per_trace(rows, names, seeds)
    return '\n'.join(lines)
