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

"""What a simulation runs with: memagg's options from --config-file (the
[consolidation], [wss], [reservoir], [swapd] and [host_reclaim] groups)
with the command line's over them, resolved into a picklable Config from
which memagg-sim and memagg-sim sweep's workers build the same
simulation."""
import argparse
import dataclasses
import math

from oslo_config import cfg

from memagg.common import cli
from memagg.common import exceptions
from memagg.common import plugins
from memagg.conf import consolidation as conf_consolidation
from memagg.conf import host_reclaim as conf_host_reclaim
from memagg.conf import reservoir as conf_reservoir
from memagg.conf import swapd as conf_swapd
from memagg.conf import wss as conf_wss
from memagg.drivers.host_reclaim import base as controller_base
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.reservoir import base as selection_base
from memagg.scheduler import consolidation
from memagg.scheduler import round_options
from memagg.sim import arguments
from memagg.sim import engine
from memagg.sim import host_reclaim
from memagg.sim import maxavg
from memagg.sim import reservoir


_NOT_OVERRIDDEN = ('memory_basis',)


def consolidation_opts():
    """The [consolidation] options a round's algorithms are built from
    (except memory_basis: both are simulated), as oslo.config Opts."""
    by_name = {opt.dest: opt for opt in conf_consolidation.opts}
    return [by_name[name] for name in round_options.OPTIONS
            if name not in _NOT_OVERRIDDEN]


def load_config(path):
    """The [consolidation], [wss], [reservoir], [swapd] and [host_reclaim]
    options of ``path`` (None: defaults), in a private ConfigOpts."""
    conf = cfg.ConfigOpts()
    for group in (conf_consolidation, conf_wss, conf_reservoir, conf_swapd,
                  conf_host_reclaim):
        group.register_opts(conf)
    try:
        conf(['--config-file', path] if path else [], project='memagg',
             prog=arguments.PROG, default_config_files=[],
             default_config_dirs=[])
    except cfg.Error as error:
        raise cli.UsageError('argument --config-file: %s' % error)
    return conf


def _option(conf, group, name, given):
    if given is not None:
        return given
    try:
        return plugins.option_value(conf, group, name)
    except exceptions.InvalidParameter as error:
        raise cli.UsageError(error.message)


#: The [consolidation] options the loop reads itself (the planner's are
#: round_options.OPTIONS).
_LOOP_OPTIONS = ('history_length', 'remote_weight')

#: The [reservoir] options the reservoir model reads.
RESERVOIR_OPTIONS = ('max_remote_ratio', 'remote_budget', 'tlp_step_percent',
                     'tlp_slack_threshold', 'donor_reserve_mb',
                     'slab_size_mb', 'donor_selection',
                     'donor_selection_params', 'tier_batch_slabs')


def simulated_options():
    """The names of the [consolidation] options a simulation depends on:
    the planner's (round_options.OPTIONS but memory_basis: each basis is
    simulated) and the loop's."""
    return [opt.dest for opt in consolidation_opts()] + list(_LOOP_OPTIONS)


@dataclasses.dataclass(frozen=True)
class Config:
    """What a simulation runs with, resolved from the configuration file
    and the command line. Picklable: memagg-sim sweep's worker processes
    build from it the very simulation memagg-sim runs.

    ``consolidation`` holds every option of simulated_options();
    ``round_interval_s`` and ``migration_time_s`` are virtual seconds
    (None: one step); ``reservoir`` holds the RESERVOIR_OPTIONS,
    ``remote_memory`` (whether VMs borrow at all), ``l2_penalty`` (None:
    one tier) and ``remote_penalty``
    (None: no remote memory); ``host_reclaim`` the [host_reclaim] options
    of controller_base.Params, ``controller`` and ``no_balloon`` (the
    share of VMs without a balloon; None: no host reclaim model).
    """

    consolidation: dict
    maxavg_samples: int
    maxavg_slice_s: float
    round_interval_s: float = None
    migration_time_s: float = None
    reservoir: dict = None
    host_reclaim: dict = None

    def algorithms(self, basis):
        """The round's plug-ins packing by ``basis``; cli.UsageError naming
        the option when one is wrong."""
        group = argparse.Namespace(**self.consolidation)
        try:
            return consolidation.load_algorithms(group,
                                                 {'memory_basis': basis})
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def settings(self, step_s):
        """The loop's engine.Settings for a trace of ``step_s`` steps."""
        migration_s = (step_s if self.migration_time_s is None
                       else self.migration_time_s)
        round_s = (step_s if self.round_interval_s is None
                   else self.round_interval_s)
        return engine.Settings(
            history_length=self.consolidation['history_length'],
            migration_steps=max(1, math.ceil(migration_s / step_s - 1e-9)),
            round_steps=max(1, math.ceil(round_s / step_s - 1e-9)),
            remote_weight=self.consolidation['remote_weight'])

    @property
    def remote_memory(self):
        """Whether VMs borrow remote memory."""
        return bool(self.reservoir and self.reservoir['remote_memory'])

    def remote_plugins(self):
        """The remote budget and donor selection plug-ins memagg-compute
        and memagg-scheduler would load (None without remote memory);
        cli.UsageError naming the option when one is wrong."""
        if not self.remote_memory:
            return None
        group = argparse.Namespace(**{name: self.reservoir[name]
                                      for name in RESERVOIR_OPTIONS})
        try:
            return (budget_base.load({budget_base.GROUP: group}),
                    selection_base.load_from_group(group))
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def reservoir_model(self, trace, hosts):
        """The reservoir.Model of the trace (None without remote
        memory)."""
        plugins = self.remote_plugins()
        if plugins is None:
            return None
        settings = reservoir.Settings(
            max_remote_ratio=self.reservoir['max_remote_ratio'],
            donor_reserve_mb=self.reservoir['donor_reserve_mb'],
            slab_size_mb=self.reservoir['slab_size_mb'],
            penalty=self.reservoir['remote_penalty'],
            l2_penalty=self.reservoir['l2_penalty'],
            tier_batch_slabs=self.reservoir['tier_batch_slabs'])
        return reservoir.Model(settings, *plugins, trace, hosts)

    def reclaim_controller(self):
        """The host reclaim controller memagg-compute would load (None
        without the host reclaim model); cli.UsageError naming the option
        when one is wrong."""
        if self.host_reclaim is None:
            return None
        options = {k: v for k, v in self.host_reclaim.items()
                   if k != 'no_balloon'}
        try:
            return controller_base.load(
                {controller_base.GROUP: argparse.Namespace(**options)})
        except exceptions.InvalidParameter as error:
            raise cli.UsageError(error.message)

    def host_reclaim_model(self, trace, wss_maxavg):
        """The host_reclaim.Model of the trace (None without one)."""
        controller = self.reclaim_controller()
        if controller is None:
            return None
        return host_reclaim.Model(controller, trace, wss_maxavg,
                                  balloon=host_reclaim.balloons(
                                      trace.vms,
                                      self.host_reclaim['no_balloon']))

    def wss_maxavg(self, trace):
        """Every VM's WSS max-average at every step of ``trace``."""
        return maxavg.maxavg(trace.wss_mb, trace.first, self.maxavg_samples,
                             self.maxavg_slice_s, trace.step_s)

    def simulation(self, trace, hosts, initial, wss_maxavg, algorithms):
        """The engine.Simulation of ``algorithms`` (from algorithms(), whose
        basis it packs by) over the trace."""
        return engine.Simulation(trace, hosts, initial, wss_maxavg,
                                 algorithms, algorithms.memory_basis,
                                 self.settings(trace.step_s),
                                 self.reservoir_model(trace, hosts),
                                 self.host_reclaim_model(trace, wss_maxavg))

    def info(self, step_s):
        """The settings as summary.json records them."""
        settings = self.settings(step_s)
        return {
            'history_length': settings.history_length,
            'remote_weight': settings.remote_weight,
            'reservoir': dict(self.reservoir or {}),
            'host_reclaim': (None if self.host_reclaim is None
                             else dict(self.host_reclaim)),
            'maxavg_samples': self.maxavg_samples,
            'maxavg_slice_s': self.maxavg_slice_s,
            'migration_time_s': settings.migration_steps * step_s,
            'round_interval_s': settings.round_steps * step_s,
            'consolidation': {name: value for name, value
                              in self.consolidation.items()
                              if name not in _LOOP_OPTIONS},
        }


def _reservoir(conf, args):
    """The Config.reservoir of ``conf`` with the --max-remote-ratio,
    --remote-budget and --remote-penalty of ``args`` over it. As
    memagg-compute, no VM borrows without memagg-swapd ([swapd] enabled) or
    with [swapd] auto_grant off, nor with a cap of 0."""
    values = {name: _option(conf, 'reservoir', name,
                            getattr(args, name, None))
              for name in RESERVOIR_OPTIONS}
    values['remote_memory'] = bool(
        _option(conf, 'swapd', 'enabled', None)
        and _option(conf, 'swapd', 'auto_grant', None)
        and values['max_remote_ratio'] > 0)
    values['remote_penalty'] = (reservoir.Settings.penalty
                                if args.remote_penalty is None
                                else args.remote_penalty)
    values['l2_penalty'] = getattr(args, 'l2_penalty', None)
    return values


def _host_reclaim(conf, args):
    """The Config.host_reclaim of ``conf`` with --host-reclaim and
    --no-balloon of ``args`` over it; None when no controller runs and
    every VM has a balloon (the model would change nothing)."""
    values = {f.name: _option(conf, controller_base.GROUP, f.name, None)
              for f in dataclasses.fields(controller_base.Params)}
    values['controller'] = _option(conf, controller_base.GROUP,
                                   'controller',
                                   getattr(args, 'host_reclaim', None))
    values['no_balloon'] = getattr(args, 'no_balloon', None) or 0.0
    if values['controller'] == 'none' and not values['no_balloon']:
        return None
    return values


def configure(conf, given, args):
    """The Config of ``conf`` (load_config) with ``given`` (an option of
    simulated_options() -> its value; None or absent: not given) and the
    --maxavg-*, --round-interval, --migration-time and remote memory
    options of ``args`` over it."""
    values = {name: _option(conf, 'consolidation', name, given.get(name))
              for name in simulated_options()}
    return Config(
        consolidation=values,
        maxavg_samples=_option(conf, 'wss', 'maxavg_samples',
                               args.maxavg_samples),
        maxavg_slice_s=_option(conf, 'wss', 'maxavg_slice_s',
                               args.maxavg_slice_s),
        round_interval_s=args.round_interval,
        migration_time_s=args.migration_time,
        reservoir=_reservoir(conf, args),
        host_reclaim=_host_reclaim(conf, args))
