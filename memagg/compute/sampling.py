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

"""One VM's native accessed-bit sampler (memagg._native) across periods.

The sampler runs from one period to the next: collect() ends the window
begun the period before and begin() opens the next, over n pages redrawn in
the VM's guest-RAM mapping. A kernel that lacks the chosen backend leaves
the VM without samples: the reason is kept for the report and logged once,
never raised. A window that fails (the kernel refused to arm or read it) is
lost, but the sampler is kept for the next period; it is opened again only
when its process is gone or when two windows in a row failed. A window the
host spoiled by moving most of the sampled pages (EAGAIN: compaction,
migration) is lost too, but says nothing against the sampler.

The DAMON samplers of the host share one kdamond. damon_memcg (each VM in
a memory cgroup of its own): a kdamond kept running, one window per
period, each VM's count read from a scheme of its own; a new draw reaches
it at commit_windows(), written by a thread of the native module, and the
window that commit lands in is lost for that VM alone. damon_paddr: a
period collects every VM (one answer of the kdamond serves them all), then
begins every VM, then commit_windows() restarts the kdamond once on all
their pages.

The sample size follows the wanted confidence (ALGORITHMS.md §1): each
window draws the n that gives the hot fraction p of the last one a
confidence interval of +-error * p, and every sample carries the interval
it achieved. The first window of a sampler (a VM that started, RAM found
again) and a window during which the balloon moved the allocation are
"warming": reported, never fed to the max-average as truth.
"""
import dataclasses
import errno
import math
import statistics

from oslo_log import log as logging

from memagg import _native
from memagg.drivers.hypervisor import base as hypervisor

LOG = logging.getLogger(__name__)

MIB = 1024 * 1024
PAGE = 4096


@dataclasses.dataclass(frozen=True)
class SampleSize:
    """How many pages a window samples: ``error`` is the wanted half-width
    of the hot fraction's interval relative to it at ``confidence`` (0: a
    fixed ``first`` pages), within [min_pages, max_pages]; ``first`` is
    the n of a window with no estimate before it."""

    first: int = 1000
    error: float = 0.05
    confidence: float = 0.95
    min_pages: int = 1000
    max_pages: int = 20000
    warming_change: float = 0.05

    @classmethod
    def from_conf(cls, wss):
        """From the [wss] options; sampler_min_pages above
        sampler_max_pages is refused, naming both."""
        if wss.sampler_min_pages > wss.sampler_max_pages:
            raise ValueError(
                '[wss] sampler_min_pages (%d) is above sampler_max_pages '
                '(%d): lower the first or raise the second'
                % (wss.sampler_min_pages, wss.sampler_max_pages))
        return cls(first=wss.sampler_pages, error=wss.sampler_error,
                   confidence=wss.sampler_confidence,
                   min_pages=wss.sampler_min_pages,
                   max_pages=wss.sampler_max_pages,
                   warming_change=wss.sampler_warming_change)

    @property
    def z(self):
        """The standard normal quantile of the two-sided confidence."""
        return statistics.NormalDist().inv_cdf((1 + self.confidence) / 2)

    def pages(self, fraction, population=None):
        """n for the next window, the last one's hot fraction (of the
        sampled range) being ``fraction`` (None: no estimate yet), out of
        ``population`` pages in the range (None: many more than n).

        A binomial proportion p estimated from n pages has the half-width
        z * sqrt(p (1 - p) / n); it is error * p for
        n0 = z^2 (1 - p) / (error^2 p). The n pages are distinct pages of
        the range, so the half-width shrinks by the finite population
        correction sqrt((N - n) / (N - 1)), and n = n0 / (1 + (n0 - 1) / N)
        pages give the same interval: at p = 0.25, 4,042 pages of a
        128 MiB range rather than 4,610, 4,590 of a 4 GiB one.
        """
        if not self.error:
            return self.first
        if fraction is None:
            wanted = self.first
        elif fraction <= 0:
            wanted = self.max_pages
        else:
            wanted = math.ceil(self.z ** 2 * (1 - fraction)
                               / (self.error ** 2 * fraction))
            if population:
                wanted = math.ceil(wanted / (1 + (wanted - 1) / population))
        return max(self.min_pages, min(self.max_pages, wanted))

    def half_width(self, accessed, sampled, population=None):
        """Half-width of the Wilson score interval of accessed / sampled at
        the confidence level, as a fraction of the sampled range; it stays
        meaningful at 0 and 1, where the normal approximation's is 0. With
        ``population`` (the pages of the range, the sampled ones distinct)
        it carries the finite population correction: 0 once every page is
        sampled."""
        if sampled <= 0:
            return None
        z, n = self.z, float(sampled)
        p = min(1.0, max(0.0, accessed / n))
        half = (z / (1 + z * z / n)
                * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)))
        if population and population > 1:
            half *= math.sqrt(max(0.0, population - n) / (population - 1))
        return half


def scaled_sample(sample, range_mb, m_cur_mb):
    """``sample`` (Sampler.collect()) with its fraction relative to m_cur.

    The pages are drawn over the whole guest-RAM mapping (the VM's maximum
    memory); pages the balloon holds are absent and never accessed. The
    share of m_cur in use is therefore f/n * range / m_cur, so that the
    estimators' (f / n) * m_cur is the accessed memory in MiB.
    """
    sampled = sample.get('sampled') or 0
    if sampled <= 0 or m_cur_mb <= 0:
        return dict(sample, fraction=None)
    accessed_mb = sample.get('accessed', 0) / sampled * range_mb
    return dict(sample, fraction=min(1.0, accessed_mb / m_cur_mb),
                accessed_mb=accessed_mb)


def commit_windows():
    """Start the windows begun this period: the host's one kdamond restarts
    on the pages of every damon_paddr sampler begun (a VM not begun this
    period keeps its window going), and the damon_memcg samplers' new draws
    go to theirs in one commit (not waited for). A refused restart is
    logged here; each VM whose window it lost sees the error at its next
    collect()."""
    try:
        _native.damon_commit()
    except OSError as exc:
        LOG.warning('DAMON windows not started: %s', exc)


class VmSampler:
    """The sampler of one VM; ``error`` says why there is none.
    ``split_huge_pages``: split the transparent huge pages under the
    sampled pages (the native Sampler's option of that name); ``per_page``:
    keep which sampled pages each window saw idle and accessed
    (``idle_pages``, ``accessed_pages``, for host-side reclaim's cold
    set)."""

    def __init__(self, driver, uuid, pages, backend, size=None,
                 split_huge_pages=False, per_page=False):
        self.driver = driver
        self.uuid = uuid
        self.size = size or SampleSize(first=pages, error=0.0)
        self.pages = self.size.pages(None)
        self.backend = backend
        self.split_huge_pages = split_huge_pages
        self.per_page = per_page
        #: The page numbers the last window saw idle and accessed (None:
        #: it has no result per page), and the n of the draw they came
        #: from.
        self.idle_pages = None
        self.accessed_pages = None
        self.idle_n = None
        self.memory = None
        self.error = None
        #: The last window was expected and lost: see collect().
        self.missed = False
        self._sampler = None
        self._begun = False
        self._failed = False
        self._armed = False
        self._windows = 0
        self._m_cur_mb = None

    @property
    def fresh(self):
        """No window has come back yet from this VM's sampler, which has
        not failed to open either: the VM has just started."""
        return self._windows == 0 and (self._sampler is not None
                                       or self.error is None)

    @property
    def backend_name(self):
        """The backend in use, None without a sampler."""
        return self._sampler.backend if self._sampler is not None else None

    def _open(self):
        try:
            memory = self.driver.guest_memory(self.uuid)
        except hypervisor.Unsupported as exc:
            self._fail('guest RAM not found: %s' % exc)
            return False
        try:
            self._sampler = _native.Sampler(
                memory.pid, memory.start, memory.length, n=self.pages,
                backend=self.backend,
                split_huge_pages=self.split_huge_pages)
        except (OSError, ValueError) as exc:
            self._fail('sampler backend %s unavailable: %s'
                       % (self.backend, exc))
            return False
        if self.per_page:
            self._sampler.per_page = True
        self.memory = memory
        self.error = None
        self._windows = 0
        LOG.info('Sampling %d pages of VM %s with %s (guest RAM %#x+%d MiB '
                 'in pid %d, found by %s)', self.pages, self.uuid,
                 self._sampler.backend, memory.start, memory.length // MIB,
                 memory.pid, memory.method)
        return True

    def _fail(self, reason, what='no sampler'):
        if reason != self.error:
            LOG.warning('VM %s: %s: %s', self.uuid, what, reason)
        self.error = reason

    def _lost(self, exc):
        """A window failed: keep the sampler unless it cannot recover."""
        self._fail('sampling failed: %s' % exc, 'sampler window lost')
        if exc.errno == errno.EAGAIN:
            # The host moved the pages under the window; the sampler
            # itself worked and the next window draws them again.
            return
        # The native sampler has already retried what a retry can save
        # (a refused DAMON re-arm); the next period may well succeed with
        # the same sampler. QEMU restarted or exited, or a second failure
        # in a row: find the guest's RAM again next period.
        if exc.errno == errno.ESRCH or self._failed:
            self._close_sampler()
        self._failed = True

    def collect(self, m_cur_mb):
        """The sample of the window begun last period, or None.

        Beyond Sampler.collect()'s keys: ``fraction`` relative to
        ``m_cur_mb`` (and ``accessed_mb``), ``n`` the pages drawn,
        ``error_mb`` the half-width of the estimate's confidence interval
        in MiB, ``warming`` for the first window of a sampler or one during
        which m_cur moved by more than the SampleSize's warming_change.
        ``missed`` says afterwards whether a window was armed last period
        and none came back.
        """
        armed, self._armed = self._armed, False
        m_cur_before, self._m_cur_mb = self._m_cur_mb, m_cur_mb
        self.missed = armed
        self.idle_pages = self.accessed_pages = None
        if self._sampler is None or not self._begun:
            return None
        self._begun = False
        try:
            sample = self._sampler.collect()
        except OSError as exc:
            self._lost(exc)
            return None
        self._failed = False
        self.error = None
        self.missed = False
        self._windows += 1
        if self.per_page:
            try:
                self.idle_pages = self._sampler.idle_pages()
                self.accessed_pages = self._sampler.accessed_pages()
                self.idle_n = self._sampler.n
            except OSError as exc:
                # A backend that counts only: no cold set, said once.
                self._fail('no idle pages for host reclaim: %s' % exc,
                           'host reclaim')
        range_mb = self.memory.length / MIB
        population = self.memory.length // PAGE
        scaled = scaled_sample(sample, range_mb, m_cur_mb)
        sampled = sample.get('sampled') or 0
        half = self.size.half_width(sample.get('accessed', 0), sampled,
                                    population)
        moved = (m_cur_before is None or m_cur_mb <= 0
                 or abs(m_cur_mb - m_cur_before)
                 > self.size.warming_change * m_cur_before)
        scaled.update(
            # clear_refs reads the whole range: its n is every page.
            n=sampled if sample.get('backend') == 'clear_refs' else self.pages,
            error_mb=None if half is None else half * range_mb,
            warming=self._windows == 1 or moved)
        if sampled > 0 and sample.get('backend') != 'clear_refs':
            self.pages = self.size.pages(sample.get('accessed', 0) / sampled,
                                         population)
        return scaled

    def begin(self):
        """Open the next window (creating the sampler when needed)."""
        # A failed open is retried every period (a guest's RAM may appear
        # later); the reason is logged only when it changes.
        if self._sampler is None and not self._open():
            return
        self._armed = True
        try:
            # A new n draws anew: keep it within a quarter of the last one
            # so that a steady VM keeps its sample (and its cost). A larger
            # n is drawn at once (the interval needs it), a smaller one with
            # the next draw: a damon_paddr draw rewrites the host kdamond's
            # regions, and its samplers draw together.
            n = self._sampler.n
            if (self.pages > n * 1.25 or (self.pages < n / 1.25
                                          and self._sampler.draws_next)):
                self._sampler.n = self.pages
            else:
                self.pages = n
            self._sampler.begin()
            self._begun = True
        except OSError as exc:
            self._lost(exc)

    def _close_sampler(self):
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None
        self._begun = False
        self._failed = False

    def close(self):
        """Stop sampling and give the kernel resources back; the next
        window is a first one (warming)."""
        self._close_sampler()
        self._armed = False
        self._m_cur_mb = None
