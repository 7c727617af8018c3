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

"""How memagg-compute pages cold guest memory out on the host (issue 19).

A mechanism (memagg.reclaim entry point) takes a VM's guest RAM (the
hypervisor's GuestMemory) and the runs of pages to reclaim. Which one runs
is detected at start: ``[host_reclaim] mechanism = auto`` takes the first
of ORDER the host offers. None of them is of use without swap space, so
each checks the host's swap first (host_swap_reason) and says why it
cannot reclaim; memagg then carries on with the balloon alone.
"""
import abc

from memagg.common import plugins

NAMESPACE = 'memagg.reclaim'
GROUP = 'host_reclaim'
#: auto: the first of these the host offers.
ORDER = ('madvise', 'memcg')
PAGE = 4096


class Unavailable(Exception):
    """The mechanism cannot reclaim on this host or for this VM; the
    message says why."""


def swap_devices(swaps='/proc/swaps'):
    """The swap files and devices ``swaps`` lists; OSError when it cannot
    be read."""
    with open(swaps) as f:
        return [line.split()[0] for line in f.read().splitlines()[1:]
                if line.strip()]


def host_swap_reason(meminfo='/proc/meminfo', swaps='/proc/swaps'):
    """Why the host has no swap space to page guest memory out into, or
    None when it has some free."""
    try:
        devices = swap_devices(swaps)
    except OSError as exc:
        return 'cannot read %s: %s' % (swaps, exc.strerror)
    if not devices:
        return 'no swap space configured (%s lists no device)' % swaps
    values = {}
    try:
        with open(meminfo) as f:
            for line in f:
                key, _, rest = line.partition(':')
                if key in ('SwapTotal', 'SwapFree'):
                    values[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError) as exc:
        return 'cannot read SwapFree from %s: %s' % (meminfo, exc)
    if values.get('SwapFree', 0) <= 0:
        return ('the host\'s swap is full (SwapFree 0 of %d KiB on %s)'
                % (values.get('SwapTotal', 0), ', '.join(devices)))
    return None


class Mechanism(metaclass=abc.ABCMeta):
    """One way of reclaiming a VM's memory on the host."""

    name = None
    #: It pages out the runs it is given (the sampler's cold set); False:
    #: it takes an amount and the kernel picks the pages.
    targeted = True

    def check_host(self):
        """Raise Unavailable when this host cannot use the mechanism."""

    @abc.abstractmethod
    def reclaim(self, memory, runs, amount_bytes):
        """Reclaim from the VM whose guest RAM is ``memory``: the ``runs``
        [(page number, pages)] (targeted), or ``amount_bytes`` (not
        targeted). Raises Unavailable (the VM cannot be reclaimed from
        this way) or hypervisor.DomainGone (its process is gone)."""


def load(conf):
    """The [host_reclaim] mechanism, checked against this host: the one
    named, or with auto the first of ORDER the host offers. Raises
    InvalidParameter for an unknown name and Unavailable (every reason)
    when the host offers none."""
    name = plugins.option_value(conf, GROUP, 'mechanism')
    candidates = ORDER if name == 'auto' else (name,)
    reasons = []
    for candidate in candidates:
        mechanism = plugins.load(NAMESPACE, candidate,
                                 '[%s] mechanism' % GROUP,
                                 'reclaim mechanism')
        try:
            mechanism.check_host()
        except Unavailable as exc:
            reasons.append('%s: %s' % (candidate, exc))
            continue
        return mechanism
    raise Unavailable('; '.join(reasons))
