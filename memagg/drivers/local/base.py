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

"""The local memory policy interface (ALGORITHMS.md §2) and its loader.

A policy turns the node's VMs (sizes, WSS, max-average) into balloon
targets. Every policy's raw targets then go through the same limits: never
below min_guest_mb nor above the VM's maximum, moves capped at max_step_mb
a period, changes under deadband_mb not applied (but for a growth to the
VM's booked size or maximum). The node's free memory
reservoir is what the targets leave of the host budget (host RAM minus
reserved host memory). Sizes are MiB.
"""
import abc
import dataclasses

from memagg.common import exceptions
from memagg.common import plugins
from memagg.drivers.local import weights as weights_mod

NAMESPACE = 'memagg.local_policy'
GROUP = 'local_policy'


@dataclasses.dataclass
class VmMemory:
    """One VM as the policy sees it.

    ``wss_mb`` is this period's raw estimate and ``wss_maxavg_mb`` its
    max-average; either may be None. ``weight`` is a number or a QoS class
    name (memagg:weight), None for the default weight.
    """

    uuid: str
    m_init_mb: int
    m_cur_mb: int
    wss_mb: int | None
    wss_maxavg_mb: int | None
    max_mb: int
    weight: object = None
    shortage: bool = False

    @property
    def demand_mb(self):
        """What the VM needs: the max-average, or the raw WSS when that is
        higher (growth applies at once); m_cur when neither is known."""
        known = [w for w in (self.wss_maxavg_mb, self.wss_mb)
                 if w is not None]
        return max(known) if known else self.m_cur_mb


@dataclasses.dataclass
class PolicyResult:
    """Balloon targets by VM uuid, and the node's free memory reservoir
    (host budget - sum of targets; negative when overcommitted)."""

    targets: dict
    reservoir_mb: int


@dataclasses.dataclass(frozen=True)
class PolicyParams:
    """Every policy's parameters; the defaults are the specification's."""

    share_policy: str = 'equal'
    tau_mode: str = 'dynamic'
    tau: float = 0.75
    tau_free_mb: int = 128
    tau_decay: float = 10.0
    weights: dict = dataclasses.field(
        default_factory=lambda: {'gold': 4.0, 'silver': 2.0, 'bronze': 1.0})
    default_weight: float = 1.0
    reclaim_chunk_mb: int = 50
    min_guest_mb: int = 256
    deadband_mb: int = 10
    max_step_mb: int = 512


class LocalPolicy(metaclass=abc.ABCMeta):
    """Computes a node's balloon targets every period."""

    #: The plug-in's name in the memagg.local_policy namespace.
    name = None

    def __init__(self, params=None):
        self.params = params or PolicyParams()

    @property
    def label(self):
        """What the API shows as an instance's local policy: the plug-in's
        name, and the mode that changes its targets where it has one."""
        return self.name

    @abc.abstractmethod
    def raw_targets(self, vms, host_budget_mb):
        """{uuid: target MiB} before the common limits."""

    def compute(self, vms, host_budget_mb):
        """The PolicyResult for ``vms`` (VmMemory) on a node with
        ``host_budget_mb`` of memory for guests."""
        uuids = [vm.uuid for vm in vms]
        if len(set(uuids)) != len(uuids):
            raise ValueError('each VM must appear once in vms')
        raw = self.raw_targets(vms, host_budget_mb) if vms else {}
        targets = {vm.uuid: self.limit(vm, raw[vm.uuid]) for vm in vms}
        return PolicyResult(targets=targets,
                            reservoir_mb=host_budget_mb
                            - sum(targets.values()))

    def limit(self, vm, target):
        """``target`` for ``vm`` after floor, ceiling, step cap, deadband
        (which never holds back a growth to the booked size or maximum)."""
        params = self.params
        target = min(vm.max_mb, max(self.floor_mb(vm), int(round(target))))
        step = params.max_step_mb
        target = min(vm.m_cur_mb + step, max(vm.m_cur_mb - step, target))
        # A growth to the VM's booked size or its maximum is applied however
        # small: every VM can always get its booked size back, and one grown
        # to within the deadband of it would otherwise stay short for good.
        if (abs(target - vm.m_cur_mb) < params.deadband_mb
                and not (target > vm.m_cur_mb
                         and target in (vm.m_init_mb, vm.max_mb))):
            return vm.m_cur_mb
        return target

    def floor_mb(self, vm):
        """The lowest target ``vm`` may get."""
        return min(self.params.min_guest_mb, vm.max_mb)


def _opt(conf, name):
    return plugins.option_value(conf, GROUP, name)


def _check(ok, option, reason):
    plugins.check_option(ok, GROUP, option, reason)


def params_from_conf(conf):
    """The PolicyParams of ``conf``'s [local_policy] group, checked.

    Raises InvalidParameter naming the option whose value is invalid.
    """
    values = {f.name: _opt(conf, f.name)
              for f in dataclasses.fields(PolicyParams)}
    _check(values['share_policy'] in ('equal', 'proportional'),
           'share_policy', '%r is neither equal nor proportional'
           % values['share_policy'])
    _check(values['tau_mode'] in ('dynamic', 'static'), 'tau_mode',
           '%r is neither dynamic nor static' % values['tau_mode'])
    _check(0.0 <= values['tau'] <= 1.0, 'tau',
           '%s is not in [0, 1]; the default is 0.75' % values['tau'])
    _check(values['tau_decay'] >= 1.0, 'tau_decay',
           '%s is below 1; the default is 10' % values['tau_decay'])
    _check(values['default_weight'] > 0, 'default_weight',
           '%s is not positive; the default is 1' % values['default_weight'])
    for name in ('tau_free_mb', 'min_guest_mb', 'deadband_mb'):
        _check(values[name] >= 0, name, '%s is negative' % values[name])
    for name in ('reclaim_chunk_mb', 'max_step_mb'):
        _check(values[name] >= 1, name, '%s is below 1' % values[name])
    try:
        values['weights'] = weights_mod.parse_weights(values['weights'])
    except ValueError as exc:
        raise exceptions.InvalidParameter(field='[%s] weights' % GROUP,
                                          reason=str(exc))
    return PolicyParams(**values)


def load_policy(conf):
    """The [local_policy] policy plug-in, with its checked parameters.

    Raises InvalidParameter naming the option when the plug-in does not
    exist or a parameter is invalid, so a bad configuration fails at start.
    """
    name = _opt(conf, 'policy')
    params = params_from_conf(conf)
    return plugins.load(NAMESPACE, name, '[%s] policy' % GROUP,
                        'local policy', args=(params,))
