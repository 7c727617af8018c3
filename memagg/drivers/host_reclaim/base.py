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

"""Host reclaim controllers (memagg.host_reclaim entry point): how much of
each VM's memory may sit in the host's swap (ALGORITHMS.md §7).

Every period memagg-compute gives the controller a VM's Signals and gets
back the VM's limit (MiB it may hold in the host's swap); what is out
beyond what the VM already holds there is paged out this period, from the
sampler's cold set. A controller keeps its state per VM and forgets a VM
that is gone.
"""
import abc
import dataclasses

from memagg.common import plugins

NAMESPACE = 'memagg.host_reclaim'
GROUP = 'host_reclaim'
PAGES_PER_MIB = 256


@dataclasses.dataclass
class Signals:
    """One VM's period, as the controller sees it. ``swapped_mb``: its
    memory in the host's swap now (QEMU's smaps_rollup Swap);
    ``promotions_per_min``: pages faulted back in from swap per minute
    (QEMU's major faults, at most as many as its swap fell by), None on
    the first period; ``psi_some``: the host's memory pressure (some avg10,
    percent), None without PSI; ``balloon_moving``: its balloon is being
    lowered this period (the balloon goes first)."""

    uuid: str
    wss_maxavg_mb: int | None
    swapped_mb: float
    promotions_per_min: float | None
    psi_some: float | None
    balloon_moving: bool = False


@dataclasses.dataclass(frozen=True)
class Params:
    """The checked [host_reclaim] options a controller runs with."""

    cold_age_s: float = 120.0
    promotion_slo: float = 0.2
    psi_some_max: float = 5.0
    grow_mb: int = 32
    backoff: float = 0.5


class Controller(metaclass=abc.ABCMeta):
    """Decides each VM's reclaim limit."""

    name = None

    def __init__(self, params=None):
        self.params = params or Params()

    def slo_per_min(self, wss_maxavg_mb):
        """The promotion SLO in pages per minute for a WSS max-average,
        None without one."""
        if wss_maxavg_mb is None:
            return None
        return (self.params.promotion_slo / 100.0 * wss_maxavg_mb
                * PAGES_PER_MIB)

    @abc.abstractmethod
    def limit_mb(self, signals):
        """MiB the VM of ``signals`` may hold in the host's swap."""

    def forget(self, uuid):
        """Drop the state kept about VM ``uuid``."""


def _check(ok, option, reason):
    plugins.check_option(ok, GROUP, option, reason)


def params_from_conf(conf):
    """The Params of ``conf``'s [host_reclaim] group; InvalidParameter
    naming the option whose value is wrong."""
    values = {f.name: plugins.option_value(conf, GROUP, f.name)
              for f in dataclasses.fields(Params)}
    _check(values['cold_age_s'] > 0, 'cold_age_s',
           '%s is not a positive number of seconds; the default is 120'
           % values['cold_age_s'])
    _check(0 < values['promotion_slo'] <= 100, 'promotion_slo',
           '%s is not a percentage of the WSS per minute in (0, 100]; the '
           'default is 0.2' % values['promotion_slo'])
    _check(0 <= values['psi_some_max'] <= 100, 'psi_some_max',
           '%s is not a percentage in [0, 100]; the default is 5'
           % values['psi_some_max'])
    _check(values['grow_mb'] >= 1, 'grow_mb',
           '%s is below 1' % values['grow_mb'])
    _check(0 < values['backoff'] < 1, 'backoff',
           '%s is not between 0 and 1; the default is 0.5'
           % values['backoff'])
    return Params(**values)


def load(conf):
    """The [host_reclaim] controller with its checked Params."""
    params = params_from_conf(conf)
    return plugins.load(NAMESPACE,
                        plugins.option_value(conf, GROUP, 'controller'),
                        '[%s] controller' % GROUP, 'host reclaim controller',
                        args=(params,))
