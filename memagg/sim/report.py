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

"""memagg-sim's JSON summary: per memory basis, hosts on, migrations by
trigger, power actions, memory and cpu overload time, remote memory; and
how many hosts packing by working set saves over packing by booked
memory.

Overload time is counted in host-seconds (a host in overload during one
step counts the step's seconds) and as a fraction of the host-seconds
hosts were on; the time VMs ran partly remote in VM-seconds and as a
fraction of the VM-seconds VMs ran, and the time hosts had such a VM as
overload time is.
"""
import json

SCHEMA_VERSION = 1


def _fraction(part, whole):
    return part / whole if whole else 0.0


def _overload(host_steps, active_host_steps, step_s):
    return {'host_seconds': float(host_steps * step_s),
            'fraction': _fraction(host_steps, active_host_steps)}


def remote_summary(stats, active_steps, step_s):
    """The summary of a run's remote memory (memagg.sim.reservoir.Stats),
    hosts having been on ``active_steps`` host-steps; with ``tiers`` when
    two were modelled."""
    hours = len(stats.in_use_mb) * step_s / 3600.0
    churn = stats.grants_made + stats.grants_ended
    summary = {
        'in_use_mb': {'mean': float(stats.in_use_mb.mean()),
                      'max': float(stats.in_use_mb.max())},
        'granted_mb': {'mean': float(stats.granted_mb.mean()),
                       'max': int(stats.granted_mb.max())},
        'grants': {
            'made': stats.grants_made,
            'ended': stats.grants_ended,
            'churn': churn,
            'churn_per_hour': churn / hours if hours else 0.0,
            'made_mb': stats.made_mb,
            'released_mb': stats.released_mb,
            'reclaimed_mb': stats.reclaimed_mb,
            'refused': stats.refused,
        },
        'partly_remote': {
            'vm_seconds': float(stats.remote_vms.sum() * step_s),
            'vm_fraction': _fraction(int(stats.remote_vms.sum()),
                                     int(stats.running_vms.sum())),
            'host_seconds': float(stats.remote_hosts.sum() * step_s),
            'host_fraction': _fraction(int(stats.remote_hosts.sum()),
                                       active_steps),
        },
        'penalty_core_seconds': stats.penalty_core_s,
    }
    if stats.l2_mb is not None:
        summary['tiers'] = {
            'l2_mb': {'mean': float(stats.l2_mb.mean()),
                      'max': int(stats.l2_mb.max())},
            'demoted_mb': stats.demoted_mb,
            'promoted_mb': stats.promoted_mb,
            'l2_granted_mb': stats.l2_granted_mb,
        }
    return summary


def reclaim_summary(stats, step_s):
    """The summary of a run's host reclaim (memagg.sim.host_reclaim.Stats):
    MiB held paged out and MiB freed (mean, max), pages promoted (total,
    per minute) and the VM-seconds over the promotion SLO."""
    minutes = len(stats.reclaimed_mb) * step_s / 60.0
    promoted = float(stats.promoted_pages.sum())
    return {
        'reclaimed_mb': {'mean': float(stats.reclaimed_mb.mean()),
                         'max': float(stats.reclaimed_mb.max())},
        'freed_mb': {'mean': float(stats.freed_mb.mean()),
                     'max': float(stats.freed_mb.max())},
        'promoted_pages': {'total': promoted,
                           'per_minute': promoted / minutes
                           if minutes else 0.0},
        'over_slo_vm_seconds': float(stats.over_slo.sum() * step_s),
    }


def basis_summary(result):
    """The summary of one Result (memagg.sim.engine); its ``remote`` is
    None when the run had no remote memory, its ``host_reclaim`` None
    without the host reclaim model."""
    step_s = result.step_s
    active = result.active_hosts
    active_steps = int(active.sum())
    return {
        'active_hosts': {
            'mean': float(active.mean()),
            'min': int(active.min()),
            'max': int(active.max()),
            'first': int(active[0]),
            'last': int(active[-1]),
            'host_seconds': float(active_steps * step_s),
        },
        'migrations': {
            'total': int(result.migrations.sum()),
            'by_trigger': {reason: int(count) for reason, count
                           in sorted(result.by_trigger.items())},
        },
        'power_on': result.power_on,
        'power_off': result.power_off,
        'memory_overload': _overload(int(result.mem_overloaded.sum()),
                                     active_steps, step_s),
        'cpu_overload': _overload(int(result.cpu_overloaded.sum()),
                                  active_steps, step_s),
        'rounds': {
            'total': result.rounds,
            'partial': result.partial_rounds,
            'unplaced_vms': result.unplaced,
            'kept_hosts': result.kept,
        },
        'rejected_vms': list(result.rejected),
        'remote': (None if result.remote is None else
                   remote_summary(result.remote, active_steps, step_s)),
        'host_reclaim': (None if result.reclaim is None else
                         reclaim_summary(result.reclaim, step_s)),
        'wall_time_s': round(result.wall_s, 3),
    }


def hosts_saved_ratio(booked, wss):
    """The share of booked packing's mean active hosts (``booked``) that
    wss packing (mean ``wss``) leaves off."""
    return (1 - wss / booked) if booked else 0.0


def summary(results, trace_info, settings_info):
    """The whole summary: ``results`` maps basis -> Result; the trace's
    and the run's settings are copied in as given."""
    bases = {basis: basis_summary(result)
             for basis, result in sorted(results.items())}
    out = {'version': SCHEMA_VERSION, 'trace': trace_info,
           'settings': settings_info, 'bases': bases}
    if 'booked' in bases and 'wss' in bases:
        booked = bases['booked']['active_hosts']['mean']
        wss = bases['wss']['active_hosts']['mean']
        out['comparison'] = {
            'active_hosts_mean_booked': booked,
            'active_hosts_mean_wss': wss,
            'hosts_saved_ratio': hosts_saved_ratio(booked, wss),
        }
    return out


def write(summary_dict, path):
    """Write the summary as indented JSON."""
    with open(path, 'w') as stream:
        json.dump(summary_dict, stream, indent=2, sort_keys=True)
        stream.write('\n')


def text(summary_dict):
    """A few lines for a terminal."""
    lines = []
    for basis, s in summary_dict['bases'].items():
        hosts = s['active_hosts']
        lines.append(
            '%-6s active hosts mean %.1f (min %d, max %d); migrations %d; '
            'memory overload %.2f%%, cpu overload %.2f%% of host time'
            % (basis, hosts['mean'], hosts['min'], hosts['max'],
               s['migrations']['total'],
               100 * s['memory_overload']['fraction'],
               100 * s['cpu_overload']['fraction']))
        remote = s.get('remote')
        if remote:
            lines.append(
                '       remote memory in use mean %.0f MiB (max %.0f); '
                'grants %d made, %d ended; VMs partly remote %.2f%% of VM '
                'time (hosts %.2f%% of host time)'
                % (remote['in_use_mb']['mean'], remote['in_use_mb']['max'],
                   remote['grants']['made'], remote['grants']['ended'],
                   100 * remote['partly_remote']['vm_fraction'],
                   100 * remote['partly_remote']['host_fraction']))
        tiers = remote and remote.get('tiers')
        if tiers:
            lines.append(
                '       local tier holds mean %.0f MiB (max %d); %d MiB '
                'demoted there, %d MiB granted there, %d MiB promoted back'
                % (tiers['l2_mb']['mean'], tiers['l2_mb']['max'],
                   tiers['demoted_mb'], tiers['l2_granted_mb'],
                   tiers['promoted_mb']))
        reclaim = s.get('host_reclaim')
        if reclaim:
            lines.append(
                '       host reclaim holds mean %.0f MiB (max %.0f), memory '
                'freed mean %.0f MiB; %.1f pages promoted a minute, %.0f '
                'VM-seconds over the SLO'
                % (reclaim['reclaimed_mb']['mean'],
                   reclaim['reclaimed_mb']['max'],
                   reclaim['freed_mb']['mean'],
                   reclaim['promoted_pages']['per_minute'],
                   reclaim['over_slo_vm_seconds']))
    comparison = summary_dict.get('comparison')
    if comparison:
        lines.append('wss packing keeps %.1f%% fewer hosts on than booked '
                     'packing' % (100 * comparison['hosts_saved_ratio']))
    return '\n'.join(lines)
