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

"""The interface of tier policies and its loader.

A policy looks at one host's VMs (each with its QoS weight and its remote
slabs, on L1 or L2, with their heat) and at the L1 slabs the host may use,
and plans which slabs move: demotions (L1 to L2) and promotions (L2 to
L1), at most a batch per interval. Like the remote budget policies, it is
pure: memagg-compute and memagg-sim run the same object over plain
numbers and carry out the plan themselves, demotions first (they free the
L1 the promotions take).
"""
import abc
import dataclasses
import math

from memagg.common import plugins

NAMESPACE = 'memagg.tiers'
GROUP = 'reservoir'
OPTION = '[%s] tier_policy' % GROUP


@dataclasses.dataclass(frozen=True)
class Slab:
    """One remote slab of a VM: its ``index`` in the VM's grant, its
    ``heat`` (swap-ins it served over the last interval, from swapd's
    ghost ring) and ``last_seen`` (when it last served one, any clock;
    larger is more recent), which breaks ties of heat. A ``pinned`` slab
    stays in its tier: its local copy missed writes (memagg-swapd's
    stale_slabs), so only its donor has all of its data."""

    index: int
    heat: int = 0
    last_seen: float = 0.0
    pinned: bool = False


@dataclasses.dataclass(frozen=True)
class VmTiers:
    """One VM as a tier policy sees it: its QoS ``weight`` (a positive
    number: memagg:weight, as the weighted local policy resolves it), its
    slabs on donors (``l1``) and in the local copy only (``l2``), and
    ``limit``, the most L1 slabs it may hold (its remote limit; None: no
    limit of its own)."""

    uuid: str
    weight: float
    l1: tuple = ()
    l2: tuple = ()
    limit: float | None = None


@dataclasses.dataclass(frozen=True)
class Move:
    """Slab ``index`` of VM ``uuid`` changes tier."""

    uuid: str
    index: int


@dataclasses.dataclass(frozen=True)
class Plan:
    """An interval's moves, in the order to make them, and each VM's L1
    allocation (slabs, by uuid) they were planned for."""

    allocations: dict
    demote: tuple = ()
    promote: tuple = ()


@dataclasses.dataclass(frozen=True)
class TierParams:
    """Every policy's parameters, from [reservoir]; the defaults are the
    options'."""

    tier_high_watermark: float = 1.0
    tier_low_watermark: float = 0.75
    tier_batch_slabs: int = 8
    tier_exchange_ratio: float = 2.0


def allocations(vms, capacity_slabs):
    """Each VM's L1 allocation (slabs, by uuid): W / ΣW × capacity, but
    never more than its limit; what a VM cannot take goes to the others
    by weight (max-min fair)."""
    shares, left, capacity = {}, list(vms), float(capacity_slabs)
    while left:
        total = sum(vm.weight for vm in left)
        capped = [vm for vm in left if vm.limit is not None
                  and vm.limit <= vm.weight / total * capacity]
        if not capped:
            shares.update({vm.uuid: vm.weight / total * capacity
                           for vm in left})
            break
        for vm in capped:
            shares[vm.uuid] = float(vm.limit)
            capacity -= vm.limit
        left = [vm for vm in left if vm not in capped]
    return shares


class TierPolicy(metaclass=abc.ABCMeta):
    """Plans a host's moves between the tiers every interval."""

    #: The plug-in's name in the memagg.tiers namespace.
    name = None

    def __init__(self, params=None):
        self.params = params or TierParams()

    def plan(self, vms, capacity_slabs):
        """The Plan for ``vms`` (VmTiers) on a host whose VMs may hold
        ``capacity_slabs`` slabs on donors in all."""
        uuids = [vm.uuid for vm in vms]
        if len(set(uuids)) != len(uuids):
            raise ValueError('each VM must appear once in vms')
        if capacity_slabs < 0:
            raise ValueError('capacity_slabs must not be negative, got %r'
                             % (capacity_slabs,))
        for vm in vms:
            if not (vm.weight > 0 and math.isfinite(vm.weight)):
                raise ValueError('weight of VM %s is %r, not a positive '
                                 'number' % (vm.uuid, vm.weight))
            if vm.limit is not None and vm.limit < 0:
                raise ValueError('limit of VM %s is %r, negative'
                                 % (vm.uuid, vm.limit))
            indexes = [s.index for s in vm.l1 + vm.l2]
            if len(set(indexes)) != len(indexes):
                raise ValueError('VM %s has a slab on both tiers or twice'
                                 % vm.uuid)
        if not vms:
            return Plan(allocations={})
        return self._plan(vms, capacity_slabs)

    @abc.abstractmethod
    def _plan(self, vms, capacity_slabs):
        """The Plan of checked, non-empty ``vms`` and ``capacity_slabs``."""


def _opt(conf, name):
    return plugins.option_value(conf, GROUP, name)


def params_from_conf(conf):
    """The TierParams of ``conf``'s [reservoir] group, checked.

    Raises InvalidParameter naming the option whose value is invalid.
    """
    values = {f.name: _opt(conf, f.name)
              for f in dataclasses.fields(TierParams)}
    high = values['tier_high_watermark']
    plugins.check_option(0.0 < high <= 1.0, GROUP, 'tier_high_watermark',
                         '%s is not in (0, 1]; the default is 1' % high)
    plugins.check_option(
        0.0 <= values['tier_low_watermark'] <= high, GROUP,
        'tier_low_watermark', '%s is not in [0, tier_high_watermark = %s]; '
        'the default is 0.75' % (values['tier_low_watermark'], high))
    return TierParams(**values)


def load(conf):
    """The [reservoir] tier_policy plug-in, with its checked parameters.

    Raises InvalidParameter naming the option when the plug-in does not
    exist or a parameter is invalid, so a bad configuration fails at start.
    """
    return plugins.load(NAMESPACE, _opt(conf, 'tier_policy'), OPTION,
                        'tier policy', args=(params_from_conf(conf),))
