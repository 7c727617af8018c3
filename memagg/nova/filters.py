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

"""RealMemoryFilter: Nova admits a VM on a host only where the memory its
VMs really use leaves room for the new VM's working set.

Enable it in nova-scheduler's nova.conf (memagg installed in
nova-scheduler's Python environment)::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = memagg.nova.filters.RealMemoryFilter
    enabled_filters = ComputeFilter,...,RealMemoryFilter

    [memagg]
    auth_type = password
    auth_url = http://controller/identity
    username = nova
    ...

The [memagg] options (memagg.nova.conf) say how memagg's API is reached
and what the filter does when it cannot tell (on_failure). Wrong values
stop nova-scheduler at start with an error naming the option.
"""
import nova.conf
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils
from oslo_log import log as logging

from memagg.nova import conf as memagg_conf
from memagg.nova import usage

LOG = logging.getLogger(__name__)

CONF = nova.conf.CONF
memagg_conf.register_opts(CONF)

#: The flavor extra spec giving the working set a VM of the flavor is
#: expected to use, in MiB.
EXTRA_SPEC = 'memagg:expected_wss_mb'

_PASS = {'open': 'passes them', 'closed': 'refuses them'}


def _name(flavor):
    return flavor.name if 'name' in flavor else '(unnamed)'


def expected_wss_mb(flavor, snapshot):
    """The working set a VM of ``flavor`` is expected to use, MiB: its
    extra spec memagg:expected_wss_mb, else [memagg] expected_wss_ratio
    times its memory. A malformed extra spec is logged (once per answer of
    memagg, ``snapshot``) and the ratio is used."""
    specs = flavor.extra_specs if 'extra_specs' in flavor else {}
    raw = specs.get(EXTRA_SPEC)
    ratio = snapshot.settings.expected_wss_ratio
    if raw is not None:
        try:
            value = int(raw)
        except (TypeError, ValueError):
            value = 0
        if value > 0:
            return value
        if snapshot.first_time((EXTRA_SPEC, _name(flavor), raw)):
            LOG.warning('Flavor %(flavor)s: extra spec %(spec)s = %(raw)r '
                        'is not a positive whole number of MiB; using '
                        '[memagg] expected_wss_ratio (%(ratio)s) of its '
                        '%(memory)d MiB. Fix the flavor with: openstack '
                        'flavor set --property %(spec)s=<MiB> %(flavor)s',
                        {'flavor': _name(flavor), 'spec': EXTRA_SPEC,
                         'raw': raw, 'ratio': ratio,
                         'memory': flavor.memory_mb})
    return ratio * flavor.memory_mb


class RealMemoryFilter(filters.BaseHostFilter):
    """Passes a host whose real free memory (memagg.nova.usage) is at
    least the request's expected working set (:func:`expected_wss_mb`).

    memagg's API is read once for all the hosts of a request (filter_all),
    through the cache the weigher shares. A host memagg cannot vouch for
    (memagg failing, the host unknown to it or stale) passes under
    [memagg] on_failure = open and is refused under closed, with the
    reason logged once per cache_ttl.
    """

    def __init__(self):
        super().__init__()
        # Nova makes its filters at nova-scheduler's start: a wrong
        # [memagg] value stops it there, not at the first boot.
        usage.configure(CONF)

    def host_passes(self, host_state, spec_obj):
        """Whether one host passes (Nova calls filter_all instead)."""
        return bool(self.filter_all([host_state], spec_obj))

    def filter_all(self, filter_obj_list, spec_obj):
        """The hosts of ``filter_obj_list`` that pass, as a list."""
        hosts = list(filter_obj_list)
        # A rebuild keeps its host and its flavor: no more memory is used.
        if scheduler_utils.request_is_rebuild(spec_obj):
            return hosts
        snapshot = usage.shared().snapshot(spec_obj)
        on_failure = snapshot.settings.on_failure
        if snapshot.failure is not None:
            # The cache logged why when the call failed.
            return hosts if on_failure == 'open' else []
        expected_mb = expected_wss_mb(spec_obj.flavor, snapshot)
        passed, unusable = [], []
        for host_state in hosts:
            free_mb, reason = snapshot.real_free_mb(host_state)
            if free_mb is None:
                unusable.append((host_state.host, reason))
                if on_failure == 'open':
                    passed.append(host_state)
            elif free_mb >= expected_mb:
                passed.append(host_state)
            else:
                LOG.debug('%(host)s has %(free)d MiB of real free memory, '
                          'less than the %(expected)d MiB a VM of flavor '
                          '%(flavor)s is expected to use',
                          {'host': host_state.host, 'free': free_mb,
                           'expected': expected_mb,
                           'flavor': _name(spec_obj.flavor)})
        snapshot.warn_once(unusable, 'RealMemoryFilter',
                           '%s ([memagg] on_failure = %s)'
                           % (_PASS[on_failure], on_failure))
        return passed
