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

"""The WSS estimator interface (ALGORITHMS.md §1) and its plug-in loader.

memagg-compute builds one Observation per VM and period and hands it to
that VM's own estimator; estimators keep per-VM state in themselves.
Sizes are MiB unless a name says otherwise.
"""
import abc
import dataclasses
import datetime
import functools

from memagg.common import exceptions
from memagg.common import plugins

NAMESPACE = 'memagg.wss'
GROUP = 'wss'


@dataclasses.dataclass
class Observation:
    """What memagg-compute read about one VM in one period.

    ``stats``: libvirt memoryStats (KiB), None when the guest has none.
    ``stats_rates``: per-second rates since the previous period of
    ``swap_in``/``swap_out`` (KiB/s) and ``major_fault`` (faults/s), None on
    the first period or without stats. ``sampler``: the dict of the native
    Sampler's collect(), None without a sampler. ``ghost``: the period's
    GhostPeriod from the VM's remote-swap daemon, None without one.
    """

    uuid: str
    m_cur_mb: int
    m_init_mb: int
    max_mb: int
    stats: dict | None = None
    stats_rates: dict | None = None
    sampler: dict | None = None
    ghost: object | None = None
    has_remote_swap: bool = False
    period_s: float = 10.0
    now: datetime.datetime | None = None


@dataclasses.dataclass
class Estimate:
    """One period's estimate of one VM.

    ``wss_mb`` is None when the estimator had nothing valid to go on.
    ``source`` names what the number came from (stats, sampler, ghost,
    grow, hold); ``state`` is the estimator's state (Badis: V, VG, G).
    """

    wss_mb: int | None
    source: str
    shortage: bool = False
    state: str | None = None


@dataclasses.dataclass(frozen=True)
class WssParams:
    """Every estimator's parameters; the defaults are the specification's."""

    shortage_swap_in_kb_s: float = 0.0
    shortage_major_fault_rate: float = 50.0
    ghost_bucket_mb: int = 4
    ghost_buckets: int = 100
    ghost_percentile: float = 95.0
    badis_close_ratio: float = 0.9
    badis_switch_periods: int = 2
    min_margin_mb: int = 64
    grow_step_mb: int = 128


def to_mb(value):
    """``value`` MiB (a float) as a whole number of MiB, rounded half up."""
    return int(value + 0.5)


def shortage_signal(obs, params):
    """True when the guest's swap-in or major-fault rate says it is short."""
    rates = obs.stats_rates or {}
    swap_in = rates.get('swap_in')
    major = rates.get('major_fault')
    return bool((swap_in is not None
                 and swap_in > params.shortage_swap_in_kb_s)
                or (major is not None
                    and major > params.shortage_major_fault_rate))


class WssEstimator(metaclass=abc.ABCMeta):
    """Estimates one VM's working set, period after period."""

    #: The plug-in's name in the memagg.wss namespace.
    name = None

    def __init__(self, params=None):
        self.params = params or WssParams()

    @property
    def needs_sampler(self):
        """Whether the next period's Observation should carry a sample
        (memagg-compute runs the native sampler only then)."""
        return False

    @abc.abstractmethod
    def estimate(self, obs):
        """Return the Estimate of this period's Observation ``obs``."""


def _opt(conf, name):
    return plugins.option_value(conf, GROUP, name)


def params_from_conf(conf):
    """The WssParams of ``conf``'s [wss] group, checked.

    Raises InvalidParameter naming the option whose value is invalid.
    """
    values = {f.name: _opt(conf, f.name)
              for f in dataclasses.fields(WssParams)}
    if not 0.0 < values['badis_close_ratio'] <= 1.0:
        raise exceptions.InvalidParameter(
            field='[wss] badis_close_ratio',
            reason='%s is not in (0, 1]; the default is 0.9'
            % values['badis_close_ratio'])
    if not 0.0 < values['ghost_percentile'] <= 100.0:
        raise exceptions.InvalidParameter(
            field='[wss] ghost_percentile',
            reason='%s is not in (0, 100]; the default is 95'
            % values['ghost_percentile'])
    return WssParams(**values)


def load_estimator_factory(conf):
    """A callable returning a new estimator for one VM, as [wss] says.

    The plug-in is [wss] estimator of namespace memagg.wss. Raises
    InvalidParameter naming the option when the plug-in does not exist or
    a parameter is invalid, so a bad configuration fails at start.
    """
    name = _opt(conf, 'estimator')
    params = params_from_conf(conf)
    estimator_class = plugins.load(NAMESPACE, name, '[wss] estimator',
                                   'estimator', invoke=False)
    return functools.partial(estimator_class, params)
