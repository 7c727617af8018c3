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

"""RealMemoryWeigher: Nova prefers the hosts with the most real free
memory, as memagg measures it.

Enable it in nova-scheduler's nova.conf, beside Nova's weighers or alone::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers
    weight_classes = memagg.nova.weights.RealMemoryWeigher

    [memagg]
    auth_type = password
    ...
    weight_multiplier = 1.0

It shares the [memagg] options (memagg.nova.conf) and memagg's answer with
RealMemoryFilter: with both enabled, a scheduling request reads memagg's
API once at most. Nova's RAMWeigher weighs booked free memory; lower its
``ram_weight_multiplier`` when this weigher should decide.
"""
import nova.conf
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights

from memagg.nova import conf as memagg_conf
from memagg.nova import usage

CONF = nova.conf.CONF
memagg_conf.register_opts(CONF)


class RealMemoryWeigher(weights.BaseHostWeigher):
    """Weighs a host by its real free memory in MiB (memagg.nova.usage),
    times [memagg] weight_multiplier (or its hosts' aggregate metadata
    ``memagg_weight_multiplier``).

    A host memagg cannot vouch for weighs as much as the least free host
    it can, so it never ranks above a measured one; when memagg fails,
    every host weighs the same and the weigher leaves the order to the
    others.
    """

    def __init__(self):
        super().__init__()
        # Checked at nova-scheduler's start, as the filter does.
        usage.configure(CONF)

    def weight_multiplier(self, host_state):
        """[memagg] weight_multiplier, or the host's aggregates' value."""
        return scheduler_utils.get_weight_multiplier(
            host_state, 'memagg_weight_multiplier',
            usage.shared().settings.weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        return self.weigh_objects([weights.WeighedHost(host_state, 0.0)],
                                  weight_properties)[0]

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """The raw weights of all the request's hosts, from one answer of
        memagg's API (``weight_properties`` is the RequestSpec)."""
        snapshot = usage.shared().snapshot(weight_properties)
        if snapshot.failure is not None:
            # The cache logged why when the call failed.
            return [0.0] * len(weighed_obj_list)
        free, unusable = [], []
        for weighed in weighed_obj_list:
            free_mb, reason = snapshot.real_free_mb(weighed.obj)
            if free_mb is None:
                unusable.append((weighed.obj.host, reason))
            free.append(free_mb)
        least_mb = min((mb for mb in free if mb is not None), default=0)
        snapshot.warn_once(unusable, 'RealMemoryWeigher',
                           'ranks them with the least free host')
        return [least_mb if mb is None else mb for mb in free]
