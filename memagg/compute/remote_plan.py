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

"""The plan of one period of remote memory (ALGORITHMS.md §4): what this
host may lend, what it lends beyond that and must get back, each running
VM's remote limit (the [reservoir] remote_budget plug-in) and the grants
to ask memagg-scheduler for. Pure functions of the period, so that they
are tested on hand-made periods; memagg.compute.remote acts on the Plan.
"""
import dataclasses
import math

from memagg.compute import remote_grants
from memagg.drivers.remote_budget import base as budget_base
from memagg.drivers.remote_budget import fixed as budget_fixed


@dataclasses.dataclass
class RemoteUse:
    """What memagg-compute knows of one VM's remote memory in a period:
    ``held_mb``, MiB its grants hold, on donors and in the local tier
    (what memagg-scheduler counts against its cap); ``swap_ins``, this
    period's swap-ins of its exports (the swap ghost); ``limit_mb``, its
    remote limit of the period before (None for a VM new to the policy).
    """

    held_mb: int = 0
    swap_ins: int = 0
    limit_mb: int | None = None


@dataclasses.dataclass
class Plan:
    """What one period decided (sizes in MiB).

    ``allocate``: [(instance uuid, size)] to ask grants for; ``reclaim_mb``:
    what this host lends beyond its lendable memory; ``release``: grants
    whose VM is gone; ``limits``: {instance uuid: remote limit} of the
    running VMs; ``excess_mb``: how far the limits the remote budget
    policy wanted went beyond the host's remote budget.
    """

    lendable_mb: int
    allocate: list = dataclasses.field(default_factory=list)
    reclaim_mb: int = 0
    release: list = dataclasses.field(default_factory=list)
    limits: dict = dataclasses.field(default_factory=dict)
    excess_mb: int = 0


def short_of_memory(result):
    """Whether VmResult ``result`` is of a managed VM short of memory that
    this host cannot cover: its estimator sees a shortage and the local
    policy's target stays below its WSS (the host's budget is spent, or
    the VM is at its maximum size)."""
    return bool(result.managed and result.shortage
                and result.wss_mb is not None and result.target_mb is not None
                and result.target_mb < result.wss_mb)


def plan_period(period, domains, grants, donor, reserve_mb, max_ratio,
                auto_grant=True, policy=None, use=None):
    """The Plan of one period.

    ``period``: the MemoryManager's PeriodResult; ``domains``: this
    period's DomainInfo; ``grants``: {instance uuid: remote_grants.Grant}
    of the VMs with an export; ``donor``: memagg-swapd's DONOR_STATS
    (bytes), None when it does not answer; ``policy``: the remote budget
    plug-in (None: fixed); ``use``: {instance uuid: RemoteUse} (a VM
    missing holds nothing remotely, saw no swap-ins and is new to the
    policy).

    Local needs first: nothing is lendable while a VM of this host is
    short of memory; otherwise the free reservoir less ``reserve_mb``, at
    most memagg-swapd's capacity. What memagg-swapd lends beyond that is
    to be reclaimed.

    Each running VM's remote limit comes from ``policy``, its cap being
    ``max_ratio`` of its booked memory and the host's budget that of
    budget_base.remote_budget_mb. A short VM asks for what its limit has
    beyond what it holds; a VM with a grant asks again only when the
    policy tops up.
    """
    short = [uuid for uuid, result in period.vms.items()
             if short_of_memory(result)]
    lendable = 0
    reclaim = 0
    if donor is not None:
        if not short:
            lendable = max(0, min(period.reservoir_mb - reserve_mb,
                                  donor['capacity'] // remote_grants.MIB))
        used_mb = math.ceil(donor['used'] / remote_grants.MIB)
        reclaim = max(0, used_mb - lendable)
    policy = policy or budget_fixed.FixedBudget()
    use = use or {}
    caps = {dom.uuid: int(max_ratio * dom.max_memory_mb) for dom in domains}
    held = {uuid: use[uuid].held_mb for uuid in caps if uuid in use}
    budgets = policy.limits(
        [budget_base.VmRemote(
            uuid=uuid, cap_mb=cap, used_mb=held.get(uuid, 0),
            swap_ins=use[uuid].swap_ins if uuid in use else 0,
            short=uuid in short,
            limit_mb=use[uuid].limit_mb if uuid in use else None)
         for uuid, cap in caps.items()],
        budget_base.remote_budget_mb(caps, held, auto_grant))
    allocate = []
    if auto_grant:
        for uuid in short:
            size = budgets.limits.get(uuid, 0) - held.get(uuid, 0)
            if size > 0 and (policy.tops_up or uuid not in grants):
                allocate.append((uuid, size))
    return Plan(lendable_mb=lendable, allocate=allocate, reclaim_mb=reclaim,
                limits=budgets.limits, excess_mb=budgets.excess_mb)
