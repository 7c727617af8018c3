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
"""
import errno

from oslo_log import log as logging

from memagg import _native
from memagg.drivers.hypervisor import base as hypervisor

LOG = logging.getLogger(__name__)

MIB = 1024 * 1024


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


class VmSampler:
    """The sampler of one VM; ``error`` says why there is none."""

    def __init__(self, driver, uuid, pages, backend):
        self.driver = driver
        self.uuid = uuid
        self.pages = pages
        self.backend = backend
        self.memory = None
        self.error = None
        self._sampler = None
        self._begun = False
        self._failed = False

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
                backend=self.backend)
        except (OSError, ValueError) as exc:
            self._fail('sampler backend %s unavailable: %s'
                       % (self.backend, exc))
            return False
        self.memory = memory
        self.error = None
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
            self.close()
        self._failed = True

    def collect(self, m_cur_mb):
        """The sample of the window begun last period (fraction relative
        to ``m_cur_mb``), or None."""
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
        return scaled_sample(sample, self.memory.length / MIB, m_cur_mb)

    def begin(self):
        """Open the next window (creating the sampler when needed)."""
        # A failed open is retried every period (a guest's RAM may appear
        # later); the reason is logged only when it changes.
        if self._sampler is None and not self._open():
            return
        try:
            self._sampler.begin()
            self._begun = True
        except OSError as exc:
            self._lost(exc)

    def close(self):
        """Stop sampling and give the kernel resources back."""
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None
        self._begun = False
        self._failed = False
