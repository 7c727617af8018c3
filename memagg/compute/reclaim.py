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

"""Host-side reclaim of cold guest pages in memagg-compute (issue 19,
ALGORITHMS.md §7).

The cold set comes from the VM's native sampler, never from a guess. The
sampler watches n pages drawn one per n equal slices of the guest-RAM
mapping and, with per_page on, tells which of them stayed idle through a
window. ColdSet follows the 2 MiB blocks of the sampled pages across
windows: an idle sampled page is cold once its block's sampled pages were
seen, all idle, in every window for [host_reclaim] cold_age_s; a window
that saw one of them accessed, or saw none of them, starts the block's
clock again. A block's clock, not a page's, goes on when the sampler draws
anew, which it does each time one of its pages moves, appears or goes.
The sampler sees a subset: what is paged out is the slice each cold
sampled page was drawn from (its stratum, the part of the guest's RAM it
stands for in the WSS estimate), cut at the 2 MiB boundaries around it, so
that a run never reaches into a huge page other than the sample's own.
Huge pages: the sampler splits the huge pages under its samples ([wss]
sampler_split_huge_pages), each sampled 4 KiB page then having its own
accessed bit; when it does not, an idle sample under a huge page means its
whole 2 MiB was idle, and the kernel pages such a huge page out whole.

A 2 MiB block of which a page came back (pagemap shows it resident again:
the guest touched it) is warm: no page of it is paged out again for the
cold age, doubled at each further refault (up to 32 times). Sampled pages
stand for their whole slice, and pages of the guest's kernel image and a
few other blocks are touched less often than the cold age yet touched:
measured on a TCG guest with zswap, 89 % of the pages that came back were
in blocks that came back again after a later page-out. A swap file hides
them (pages written to it stay in the swap cache until the host is short
of memory, so their refault is a minor fault, not a promotion); zswap
frees them at once, and each comes back as a major fault.

How much is paged out is the [host_reclaim] controller's: each VM's limit
(MiB it may hold in the host's swap) less what it holds (QEMU's swapped
memory), the cold runs of the blocks idle longest taken first until that
is met (a block barely past the cold age, a guest kernel's page touched
now and then, goes after those idle all along). Nothing
is paged out while the host has no free swap space: the reason is reported
and the balloon goes on alone.
"""
import bisect
import collections
import dataclasses
import os
import time

from oslo_log import log as logging
from oslo_utils import strutils

from memagg.drivers.compute_api import base as compute_api
from memagg.drivers.host_reclaim import base as controller_base
from memagg.drivers.hypervisor import base as hypervisor
from memagg.drivers.reclaim import base as mechanism_base

LOG = logging.getLogger(__name__)

PAGE = 4096
HUGE_PAGES = 512        # 4 KiB pages in a 2 MiB huge page
PAGES_PER_MIB = 256
#: Most doublings of the cold age a refaulted block is held warm for.
MAX_STRIKES = 5
# The promotion rate is counted over the latest periods that span at least
# this long: the SLO is per minute, and a period of a few seconds holds a
# page or two, so its own rate would read 20-40 a minute from one refault.
RATE_WINDOW_S = 60.0
# pagemap's last byte of an entry holds the present bit (bit 63): 1 for
# every value with it set.
_PRESENT = bytes(0x80) + b'\x01' * 0x80


class ColdSet:
    """The 2 MiB blocks of one VM whose sampled pages were seen idle window
    after window, and since when; the idle sampled pages in them.

    A block's clock, not a page's: the sampler draws anew every time one of
    its pages moves, appears or goes (a page-out makes its own samples go),
    so a page's clock would start again at each draw and, for a cold age
    of several periods, a live guest's samples would seldom reach it. A
    block's clock goes on across draws while each window sees sampled pages
    of it, all idle."""

    def __init__(self, cold_age_s):
        self.cold_age_s = cold_age_s
        self._since = {}
        self._idle = set()

    def update(self, idle_pages, accessed_pages, window_start):
        """The window that began at ``window_start`` (monotonic seconds)
        saw ``idle_pages`` idle and ``accessed_pages`` accessed; the clock
        of a block it saw accessed, or did not see, starts again."""
        hot = {p // HUGE_PAGES for p in accessed_pages}
        idle = {p // HUGE_PAGES for p in idle_pages} - hot
        since = self._since
        self._since = {b: since.get(b, window_start) for b in idle}
        self._idle = {p for p in idle_pages if p // HUGE_PAGES in idle}

    def cold(self, now):
        """The idle sampled pages whose block was idle for the cold age at
        ``now``, sorted."""
        return sorted(p for p in self._idle
                      if now - self._since[p // HUGE_PAGES]
                      >= self.cold_age_s)

    def since(self, page):
        """Since when the block of the idle sampled ``page`` was idle."""
        return self._since[page // HUGE_PAGES]

    def drop(self, pages):
        """Forget ``pages`` (paged out); their blocks' clocks go on."""
        self._idle.difference_update(pages)

    def __len__(self):
        return len(self._idle)


def runs_around(pages, start, length, n):
    """[(first page, pages)] to page out for the cold sampled ``pages``
    (page numbers) of a mapping of ``length`` bytes from ``start``, drawn
    one per ``n`` equal slices: each page's slice, cut at the 2 MiB
    boundaries around the page, in address order, merged where adjacent."""
    first_page = start // PAGE
    nr_pages = length // PAGE
    runs = []
    for page in pages:
        index = page - first_page
        if not 0 <= index < nr_pages:
            continue
        stratum = index * n // nr_pages
        lo = first_page + stratum * nr_pages // n
        hi = first_page + (stratum + 1) * nr_pages // n
        block = page - page % HUGE_PAGES
        lo, hi = max(lo, block), min(hi, block + HUGE_PAGES)
        if runs and runs[-1][0] + runs[-1][1] >= lo:
            end = max(runs[-1][0] + runs[-1][1], hi)
            runs[-1] = (runs[-1][0], end - runs[-1][0])
        elif hi > lo:
            runs.append((lo, hi - lo))
    return runs


def covered(pages, runs):
    """The ``pages`` inside one of ``runs`` (sorted, disjoint
    (first, count) pairs, as runs_around and take give them)."""
    firsts = [first for first, _ in runs]
    inside = []
    for page in pages:
        at = bisect.bisect_right(firsts, page) - 1
        if at >= 0 and page < runs[at][0] + runs[at][1]:
            inside.append(page)
    return inside


def take(runs, pages):
    """The first runs of ``runs`` holding at most ``pages`` pages, the
    last one cut."""
    taken, left = [], pages
    for first, count in runs:
        if left <= 0:
            break
        taken.append((first, min(count, left)))
        left -= count
    return taken


def coldest_runs(pages, since, start, length, n, want_pages):
    """The runs (runs_around's, in address order) holding at most
    ``want_pages`` pages for the cold sampled ``pages``, those idle
    longest first: ``since(page)`` says since when."""
    chosen, total = [], 0
    for page in sorted(pages, key=lambda p: (since(p), p)):
        if total >= want_pages:
            break
        for _first, count in runs_around([page], start, length, n):
            chosen.append(page)
            total += count
    return take(runs_around(sorted(chosen), start, length, n), want_pages)


def by_block(runs):
    """``runs`` [(first page, pages)] cut at the 2 MiB boundaries:
    {block (first page // 512): [(first page, pages)]}."""
    blocks = {}
    for first, count in runs:
        end = first + count
        while first < end:
            cut = min(end, first - first % HUGE_PAGES + HUGE_PAGES)
            blocks.setdefault(first // HUGE_PAGES, []).append(
                (first, cut - first))
            first = cut
    return blocks


def refaulted_blocks(pid, blocks, proc='/proc'):
    """The blocks of ``blocks`` ({block: [(first page, pages)]}, paged out
    of process ``pid``) a page of which is resident again; DomainGone when
    the process has exited."""
    try:
        fd = os.open('%s/%d/pagemap' % (proc, pid), os.O_RDONLY)
    except (FileNotFoundError, ProcessLookupError):
        raise hypervisor.DomainGone('process %d is gone' % pid)
    back = set()
    try:
        for block, runs in blocks.items():
            for first, count in runs:
                entries = os.pread(fd, count * 8, first * 8)
                if b'\x01' in entries[7::8].translate(_PRESENT):
                    back.add(block)
                    break
    except ProcessLookupError:
        raise hypervisor.DomainGone('process %d is gone' % pid)
    finally:
        os.close(fd)
    return back


def psi_some(path='/proc/pressure/memory'):
    """The host's memory pressure: 'some' avg10 (percent), None without
    PSI."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith('some '):
                    fields = dict(kv.split('=') for kv in line.split()[1:])
                    return float(fields['avg10'])
    except (OSError, KeyError, ValueError):
        return None
    return None


def process_counters(pid, proc='/proc'):
    """(MiB of process ``pid`` in swap, its major faults); DomainGone when
    it has exited. The swap is smaps_rollup's, not status' VmSwap: guest
    RAM backed by a memfd (shared memory) leaves no swap entry in QEMU's
    page tables, and VmSwap counts only those."""
    try:
        with open('%s/%d/smaps_rollup' % (proc, pid)) as f:
            rollup = f.read()
        with open('%s/%d/stat' % (proc, pid)) as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        raise hypervisor.DomainGone('process %d is gone' % pid)
    swap_kb = 0
    for line in rollup.splitlines():
        if line.startswith('Swap:'):
            swap_kb = int(line.split()[1])
    # The command name may hold spaces: fields count from after its ')'.
    majflt = int(stat.rsplit(')', 1)[1].split()[9])
    return swap_kb / 1024.0, majflt


def opt_out_reason(value):
    """Why a VM whose flavor or image sets memagg:host_reclaim to
    ``value`` (None: not set) is left alone, or None. A value that is
    not a boolean leaves it alone too: reclaiming a VM whose owner meant
    to opt out would be the worse mistake."""
    if value is None:
        return None
    try:
        wanted = strutils.bool_from_string(value, strict=True)
    except ValueError:
        return ('%s=%r is not a boolean: not reclaimed'
                % (compute_api.HOST_RECLAIM_KEY, value))
    if wanted:
        return None
    return 'opted out (%s=%s)' % (compute_api.HOST_RECLAIM_KEY, value)


@dataclasses.dataclass
class VmReclaim:
    """One VM's host reclaim this period: MiB in the host's swap, paged
    out this period, the promotion rate over the last minute and its SLO
    (pages per minute),
    the mechanism, and why nothing was reclaimed when so."""

    reclaimed_mb: float = 0.0
    paged_out_mb: float = 0.0
    limit_mb: int = 0
    promotions_per_min: float | None = None
    slo_per_min: float | None = None
    mechanism: str | None = None
    reason: str | None = None

    @property
    def label(self):
        """The mechanism as memagg-compute reports it: 'madvise', 'memcg'
        or 'none', followed by ': <reason>' when it reclaims nothing."""
        name = self.mechanism or 'none'
        return name if self.reason is None else '%s: %s' % (name,
                                                            self.reason)

    def promotion_pct(self, wss_maxavg_mb):
        """The promotion rate as a percentage of ``wss_maxavg_mb`` per
        minute (the unit of [host_reclaim] promotion_slo); None without
        either."""
        if self.promotions_per_min is None or not wss_maxavg_mb:
            return None
        return (100.0 * self.promotions_per_min
                / (wss_maxavg_mb * PAGES_PER_MIB))


#: What a VM's mechanism reads as when the node runs no controller.
OFF = VmReclaim(reason='host reclaim off ([host_reclaim] controller = '
                       'none)')


class _VmState:
    def __init__(self, cold_age_s):
        self.cold = ColdSet(cold_age_s)
        self.counters = None    # (monotonic time, major faults, swap MiB)
        self.promoted = collections.deque()     # (period start, promotions)
        self.out = {}           # block: [(first page, pages)] paged out
        self.warm = {}          # block: (warm until, refaults)

    def refaulted(self, blocks, now, cold_age_s):
        """``blocks`` had a page come back at ``now``: warm for the cold
        age doubled per refault, no longer watched."""
        for block in blocks:
            strikes = self.warm.get(block, (0, 0))[1]
            self.warm[block] = (
                now + cold_age_s * 2 ** min(strikes, MAX_STRIKES),
                strikes + 1)
            self.out.pop(block, None)

    def promotion_rate(self, start, promotions, now):
        """Count ``promotions`` in the period from ``start`` to ``now``;
        promotions per minute over the latest periods that span at least
        RATE_WINDOW_S (all of them until they do)."""
        self.promoted.append((start, promotions))
        while (len(self.promoted) > 1
               and now - self.promoted[1][0] >= RATE_WINDOW_S):
            self.promoted.popleft()
        counted = sum(p for _, p in self.promoted)
        return counted / (now - self.promoted[0][0]) * 60.0

    def is_warm(self, page, now):
        return self.warm.get(page // HUGE_PAGES, (0, 0))[0] > now


class HostReclaim:
    """Host-side reclaim for the VMs of one node. Loads the controller
    and the mechanism at construction: a wrong option fails there, naming
    it; a host that offers no mechanism disables reclaim with the reason
    (logged once, reported per VM)."""

    def __init__(self, conf, clock=time.monotonic, psi=psi_some,
                 swap_reason=mechanism_base.host_swap_reason,
                 counters=process_counters, refaulted=refaulted_blocks):
        self.controller = controller_base.load(conf)
        self.enabled = self.controller.name != 'none'
        self.cold_age_s = self.controller.params.cold_age_s
        self.mechanism = None
        self.unavailable = None
        self._clock = clock
        self._psi = psi
        self._swap_reason = swap_reason
        self._counters = counters
        self._refaulted = refaulted
        self._vms = {}
        if self.enabled:
            try:
                self.mechanism = mechanism_base.load(conf)
            except mechanism_base.Unavailable as exc:
                self.unavailable = 'no reclaim mechanism: %s' % exc
                LOG.warning('Host reclaim disabled: %s', self.unavailable)
            else:
                LOG.info('Host reclaim: %s controller, %s mechanism',
                         self.controller.name, self.mechanism.name)

    @property
    def needs_idle_pages(self):
        """The samplers must keep each sample's result (per_page)."""
        return self.mechanism is not None and self.mechanism.targeted

    def observe(self, uuid, idle_pages, accessed_pages, window_s):
        """Feed VM ``uuid``'s last window: ``idle_pages`` and
        ``accessed_pages`` (the sampler's idle_pages() and
        accessed_pages(), None when it has none) over ``window_s`` seconds
        ending now."""
        if not self.enabled:
            return
        state = self._vms.setdefault(uuid, _VmState(self.cold_age_s))
        now = self._clock()
        state.cold.update(idle_pages or (), accessed_pages or (),
                          now - (window_s or 0))

    def period(self, uuid, memory, sample_n, wss_maxavg_mb, balloon_moving,
               psi=None, setting=None):
        """Decide and reclaim for VM ``uuid`` (guest RAM ``memory``, its
        sampler's n); a VmReclaim, or None when reclaim is off. ``psi``:
        the host's pressure read once for the period (read here if
        None); ``setting``: its memagg:host_reclaim (opt_out_reason).
        Raises hypervisor.DomainGone when its process is gone."""
        if not self.enabled:
            return None
        result = VmReclaim(mechanism=self.mechanism.name
                           if self.mechanism else None)
        if self.mechanism is None:
            result.reason = self.unavailable
            return result
        opted_out = opt_out_reason(setting)
        if opted_out is not None:
            # Its limit starts from nothing if it opts in again.
            self.forget(uuid)
            result.reason = opted_out
            return result
        if memory is None:
            result.reason = 'guest RAM not found'
            return result
        state = self._vms.setdefault(uuid, _VmState(self.cold_age_s))
        now = self._clock()
        swapped_mb, majflt = self._counters(memory.pid)
        rate = None
        if state.counters is not None and now > state.counters[0]:
            then, faults, swap_left_mb = state.counters
            if majflt >= faults:
                # A promotion is a major fault that took a page out of
                # swap: QEMU's own file pages, dropped from the host's
                # page cache, fault back too and leave its swap as it was.
                back = max(0.0, swap_left_mb - swapped_mb) * PAGES_PER_MIB
                rate = state.promotion_rate(then, min(majflt - faults, back),
                                            now)
            else:
                state.promoted.clear()
        state.counters = (now, majflt, swapped_mb)
        if state.out:
            state.refaulted(self._refaulted(memory.pid, state.out), now,
                            self.cold_age_s)
        signals = controller_base.Signals(
            uuid=uuid, wss_maxavg_mb=wss_maxavg_mb, swapped_mb=swapped_mb,
            promotions_per_min=rate,
            psi_some=self._psi() if psi is None else psi,
            balloon_moving=balloon_moving)
        limit = self.controller.limit_mb(signals)
        result.reclaimed_mb = swapped_mb
        result.limit_mb = limit
        result.promotions_per_min = rate
        result.slo_per_min = self.controller.slo_per_min(wss_maxavg_mb)
        want_pages = int((limit - swapped_mb) * PAGES_PER_MIB)
        if want_pages <= 0:
            return result
        reason = self._swap_reason()
        if reason is not None:
            result.reason = reason
            return result
        runs = []
        if self.mechanism.targeted:
            cold = [page for page in state.cold.cold(now)
                    if not state.is_warm(page, now)]
            runs = coldest_runs(cold, state.cold.since, memory.start,
                                memory.length, sample_n, want_pages)
            if not runs:
                return result
            # Paged out, the samples are no longer in place: their next
            # window leaves them out and a fault back starts them anew.
            state.cold.drop(covered(cold, runs))
        try:
            self.mechanism.reclaim(memory, runs, want_pages * PAGE)
        except mechanism_base.Unavailable as exc:
            result.reason = str(exc)
            LOG.warning('VM %s: host reclaim failed: %s', uuid, exc)
            return result
        # The swap the next period's promotions are counted down from.
        state.counters = (now, majflt, self._counters(memory.pid)[0])
        for block, parts in by_block(runs).items():
            state.out.setdefault(block, []).extend(parts)
        result.paged_out_mb = (sum(c for _, c in runs) if runs
                               else want_pages) / PAGES_PER_MIB
        LOG.debug('VM %s: paged out %.1f MiB (limit %d MiB, in swap %.1f '
                  'MiB, promotions %s/min)', uuid, result.paged_out_mb,
                  limit, swapped_mb, rate)
        return result

    def forget(self, uuid):
        """Drop what is kept about VM ``uuid`` (gone, or mid-reclaim)."""
        self._vms.pop(uuid, None)
        self.controller.forget(uuid)
