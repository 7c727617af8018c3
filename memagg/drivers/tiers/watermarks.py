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

"""watermarks: Double-Decker's two-level allocation (ALGORITHMS.md §8).

Each VM's L1 allocation is its weighted share of the host's L1 capacity
(never more than its own limit: base.allocations); its high watermark is
tier_high_watermark of that share, its low one tier_low_watermark, both
in whole slabs. Per interval, at most
tier_batch_slabs moves:

1. while a VM is above its high watermark, the VM most over its
   allocation demotes its coldest L1 slab;
2. while a VM that started the interval below its low watermark is below
   its high one, with L1 free on the host and a hot L2 slab, the VM most
   under its allocation promotes its hottest L2 slab;
3. then, in the other VMs, an L2 slab at least tier_exchange_ratio times
   hotter than the VM's coldest L1 slab (its swap-ins plus one) takes
   that slab's place (a demotion and a promotion), the VM with the
   largest difference first, so a hot subset ends up on L1 whatever tier
   its slabs were first given, while slabs of about the same heat stay
   where they are.

Heat is swap-ins over the last interval, ties broken by recency; a slab
with none is never promoted. A pinned slab never moves.
"""
import math

from memagg.drivers.tiers import base


# Pinned slabs last: a VM's first slab is the one it would move.
def _coldest_first(slab):
    return (slab.pinned, slab.heat, slab.last_seen, slab.index)


def _hottest_first(slab):
    return (slab.pinned, -slab.heat, -slab.last_seen, slab.index)


def _movable(slabs):
    """Whether the first of ``slabs`` may move."""
    return bool(slabs) and not slabs[0].pinned


class Watermarks(base.TierPolicy):
    """Demote above the high watermark, promote below the low one, from
    and into the VMs furthest from their allocations first."""

    name = 'watermarks'

    def _plan(self, vms, capacity_slabs):
        shares = base.allocations(vms, capacity_slabs)
        high = {u: math.floor(self.params.tier_high_watermark * a)
                for u, a in shares.items()}
        low = {u: math.floor(self.params.tier_low_watermark * a)
               for u, a in shares.items()}
        l1 = {vm.uuid: sorted(vm.l1, key=_coldest_first) for vm in vms}
        l2 = {vm.uuid: sorted(vm.l2, key=_hottest_first) for vm in vms}
        budget = self.params.tier_batch_slabs
        demote, promote = [], []

        def most(candidates, distance):
            # Ties by uuid: the same state plans the same moves.
            return max(candidates, key=lambda u: (distance(u), u))

        def over(u):
            return len(l1[u]) - shares[u]

        def under(u):
            return shares[u] - len(l1[u])

        while budget:
            above = [u for u in l1 if len(l1[u]) > high[u]
                     and _movable(l1[u])]
            if not above:
                break
            u = most(above, over)
            demote.append(base.Move(u, l1[u].pop(0).index))
            budget -= 1

        starving = {u for u in l1 if len(l1[u]) < low[u]}
        free = math.floor(capacity_slabs) - sum(len(s) for s in l1.values())
        while budget and free > 0:
            wanting = [u for u in starving if len(l1[u]) < high[u]
                       and _movable(l2[u]) and l2[u][0].heat > 0]
            if not wanting:
                break
            u = most(wanting, under)
            slab = l2[u].pop(0)
            l1[u].append(slab)
            promote.append(base.Move(u, slab.index))
            budget -= 1
            free -= 1

        ratio = self.params.tier_exchange_ratio

        def gain(u):
            return l2[u][0].heat - l1[u][0].heat

        while budget >= 2:
            hotter = [u for u in l1 if u not in starving
                      and _movable(l1[u]) and _movable(l2[u])
                      and l2[u][0].heat >= ratio * (l1[u][0].heat + 1)]
            if not hotter:
                break
            u = most(hotter, gain)
            cold, hot = l1[u].pop(0), l2[u].pop(0)
            demote.append(base.Move(u, cold.index))
            promote.append(base.Move(u, hot.index))
            l1[u] = sorted(l1[u] + [hot], key=_coldest_first)
            l2[u] = sorted(l2[u] + [cold], key=_hottest_first)
            budget -= 2
        return base.Plan(allocations=shares, demote=tuple(demote),
                         promote=tuple(promote))
