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

"""VMs' QoS weights for the weighted local policy, cached per VM.

Asking the compute API every period for every VM would load Nova for a
value that changes only on resize or rebuild, so each VM's answer is kept
for [nova] weight_cache_ttl seconds. A failure never stops the period: a VM
Nova does not know gets the default weight; while Nova (or Glance) does not
answer, every VM keeps the weight last read (the default if none was) and
Nova is not asked again before the TTL has passed. Each failure is logged
once, not every period.
"""
import dataclasses
import time

from oslo_log import log as logging

from memagg.drivers.compute_api import base as compute_api

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class _Entry:
    weight: compute_api.QosWeight
    expires: float


class WeightResolver:
    """A VM's memagg:weight from the [compute] compute_api_driver plug-in,
    or with ``key`` another memagg setting of its flavor or image
    (memagg:host_reclaim), cached the same way; ``what`` names it in the
    log.

    ``clock`` (seconds, monotonic) is injectable for tests.
    """

    def __init__(self, conf, clock=time.monotonic,
                 key=compute_api.WEIGHT_KEY, what='QoS weight'):
        self.api = compute_api.load(conf)
        self.key = key
        self.what = what
        self.ttl = conf.nova.weight_cache_ttl
        self._clock = clock
        self._cache = {}
        self._not_found = set()
        self._down_until = None

    def weight(self, uuid):
        """VM ``uuid``'s memagg:weight (a number or class name, unparsed:
        VmMemory.weight), or None for the policy's default weight."""
        now = self._clock()
        entry = self._cache.get(uuid)
        if entry is not None and now < entry.expires:
            return entry.weight.value
        if self._down_until is not None and now < self._down_until:
            return entry.weight.value if entry is not None else None
        try:
            found = (self.api.get_qos_weight(uuid)
                     if self.key == compute_api.WEIGHT_KEY
                     else self.api.get_vm_setting(uuid, self.key))
        except compute_api.InstanceNotFound as exc:
            if uuid not in self._not_found:
                LOG.warning('VM %s: %s; it gets the default %s, asked '
                            'again every %d s', uuid, exc, self.what,
                            self.ttl)
                self._not_found.add(uuid)
            found = compute_api.NO_WEIGHT
        except compute_api.ComputeApiUnavailable as exc:
            if self._down_until is None:
                LOG.warning('%ss unavailable (%s); VMs keep the one '
                            'last read or get the default, retried in %d s',
                            self.what, exc, self.ttl)
            self._down_until = now + self.ttl
            return entry.weight.value if entry is not None else None
        else:
            self._not_found.discard(uuid)
        if self._down_until is not None:
            LOG.info('%ss available again', self.what)
            self._down_until = None
        if entry is None or entry.weight != found:
            LOG.info('VM %s: %s %s', uuid, self.what,
                     '%s (from its %s)' % (found.value, found.source)
                     if found.value is not None else 'default')
        self._cache[uuid] = _Entry(found, now + self.ttl)
        return found.value

    def forget(self, uuid):
        """Drop what is cached about VM ``uuid`` (it left the node)."""
        self._cache.pop(uuid, None)
        self._not_found.discard(uuid)
