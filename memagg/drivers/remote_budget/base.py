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

"""The interface of per-VM remote budgets and its loader.

A policy turns a node's VMs (each with its cap, the remote memory it holds,
its swap-ins of the period and its limit of the period before) and the
node's remote budget into each VM's remote limit for this period. Policies
are pure: they keep nothing between periods and touch nothing; the caller
keeps the limits and hands them back the next period, so memagg-compute
and memagg-sim run the same object over plain numbers. Sizes are MiB.
"""
import abc
import dataclasses

from memagg.common import exceptions
from memagg.common import plugins

NAMESPACE = 'memagg.remote_budget'
GROUP = 'reservoir'
OPTION = '[%s] remote_budget' % GROUP


@dataclasses.dataclass(frozen=True)
class VmRemote:
    """One VM as a remote budget policy sees it.

    ``cap_mb``: the most it may hold remotely ([reservoir] max_remote_ratio
    of its booked memory); ``used_mb``: the remote memory it holds now;
    ``swap_ins``: its swap-ins of this period; ``short``: it is short of
    memory its node cannot give it; ``limit_mb``: its limit of the period
    before, None for a VM new to the policy.
    """

    uuid: str
    cap_mb: int
    used_mb: int = 0
    swap_ins: int = 0
    short: bool = False
    limit_mb: int | None = None


@dataclasses.dataclass(frozen=True)
class Budgets:
    """A period's limits by VM uuid, and ``excess_mb``: how far the limits
    the policy wanted went beyond the node's budget (0 within it)."""

    limits: dict
    excess_mb: int = 0


@dataclasses.dataclass(frozen=True)
class BudgetParams:
    """Every policy's parameters, from [reservoir]; the defaults are the
    options'."""

    tlp_step_percent: float = 2.0
    tlp_slack_threshold: float = 0.25


class RemoteBudget(metaclass=abc.ABCMeta):
    """Computes a node's per-VM remote limits every period."""

    #: The plug-in's name in the memagg.remote_budget namespace.
    name = None
    #: Whether a VM that holds remote memory already asks for more when its
    #: limit grows beyond what it holds (each such request is one more
    #: grant, and one more disk in the guest).
    tops_up = False
    #: Whether a VM's limit depends on its limit of the period before
    #: (VmRemote.limit_mb). memagg-compute runs the policy on every VM
    #: every period; memagg-sim runs it only on the hosts where a limit may
    #: change: those short of memory and, for a policy that remembers, those
    #: whose VMs' limits differ from their use.
    remembers = False

    def __init__(self, params=None):
        self.params = params or BudgetParams()

    def limits(self, vms, budget_mb):
        """The Budgets of ``vms`` (VmRemote) on a node whose VMs may hold
        ``budget_mb`` of remote memory in all."""
        uuids = [vm.uuid for vm in vms]
        if len(set(uuids)) != len(uuids):
            raise ValueError('each VM must appear once in vms')
        if budget_mb < 0:
            raise ValueError('budget_mb must not be negative, got %r'
                             % (budget_mb,))
        return self._limits(vms, budget_mb)

    @abc.abstractmethod
    def _limits(self, vms, budget_mb):
        """The Budgets of checked ``vms`` and ``budget_mb``."""


def remote_budget_mb(caps, held, may_ask):
    """A host's remote budget: what its VMs hold on donors (``held``,
    {uuid: MiB}) plus what it may still ask memagg-scheduler for, which is
    what memagg-scheduler would still grant each VM under its cap
    (``caps``, {uuid: MiB}), or nothing when it may not ask (``may_ask``
    false: [swapd] auto_grant off, or memagg-swapd not answering).

    memagg-compute, and memagg-sim as it, knows no tighter bound (the
    donors' lendable memory is memagg-scheduler's), so no VM's limit,
    being at most its cap or its use, can take the sum of the limits
    beyond this budget while it may ask; when it may not, the budget is
    what the VMs hold and the limits are scaled to it."""
    room = sum(max(0, caps[uuid] - held.get(uuid, 0)) for uuid in caps)
    return sum(held.values()) + (room if may_ask else 0)


def _opt(conf, name):
    return plugins.option_value(conf, GROUP, name)


def params_from_conf(conf):
    """The BudgetParams of ``conf``'s [reservoir] group, checked.

    Raises InvalidParameter naming the option whose value is invalid.
    """
    values = {f.name: _opt(conf, f.name)
              for f in dataclasses.fields(BudgetParams)}
    if not 0.0 < values['tlp_step_percent'] <= 100.0:
        raise exceptions.InvalidParameter(
            field='[%s] tlp_step_percent' % GROUP,
            reason='%s is not in (0, 100]; the default is 2'
            % values['tlp_step_percent'])
    if not 0.0 <= values['tlp_slack_threshold'] <= 1.0:
        raise exceptions.InvalidParameter(
            field='[%s] tlp_slack_threshold' % GROUP,
            reason='%s is not in [0, 1]; the default is 0.25'
            % values['tlp_slack_threshold'])
    return BudgetParams(**values)


def load(conf):
    """The [reservoir] remote_budget plug-in, with its checked parameters.

    Raises InvalidParameter naming the option when the plug-in does not
    exist or a parameter is invalid, so a bad configuration fails at start.
    """
    name = _opt(conf, 'remote_budget')
    params = params_from_conf(conf)
    return plugins.load(NAMESPACE, name, OPTION, 'remote budget policy',
                        args=(params,))
