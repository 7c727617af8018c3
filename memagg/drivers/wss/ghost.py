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

"""Swap-ghost distances (ALGORITHMS.md §1.3, "Geiger").

A VM's remote-swap daemon sees every page it evicts (swap-out) and every
page read back (swap-in), by offset. GhostTracker keeps the evicted offsets
in eviction order. A swap-in of a queued offset has a distance D: 1 plus
the number of pages evicted after it, i.e. how many more resident pages
would have kept it in memory. The distances of a period go to a histogram
of fixed-width buckets; end_period() returns the smallest distance covering
a percentile of them and starts a new histogram (the queue stays).

Each swap-out and swap-in costs O(log n) for n queued pages: a Fenwick tree
over eviction sequence numbers counts the pages evicted after a given one.
"""
import dataclasses
import math
import threading

PAGE_SIZE = 4096
MIB = 1024 * 1024

SWAP_OUT = 'out'
SWAP_IN = 'in'


@dataclasses.dataclass(frozen=True)
class GhostPeriod:
    """One period of swap-ghost data.

    ``swap_ins``: swap-ins of queued offsets (each gave a distance);
    ``unmatched_swap_ins``: swap-ins of offsets never seen evicted;
    ``distance_pages``: the smallest histogram bucket edge covering the
    percentile of the distances, None when there were no swap-ins.
    """

    swap_ins: int
    unmatched_swap_ins: int
    swap_outs: int
    distance_pages: int | None
    histogram: tuple
    page_size: int = PAGE_SIZE

    @property
    def ghost_mb(self):
        """m_ghost in MiB (D pages), or None without swap-ins."""
        if self.distance_pages is None:
            return None
        return self.distance_pages * self.page_size / MIB


class _Fenwick:
    """Counts over positions 0..size-1: add and prefix sums in O(log n)."""

    def __init__(self, size, ones=()):
        self.size = size
        tree = [0] * (size + 1)
        for position in ones:
            tree[position + 1] += 1
        # Linear-time build: push each node's total into its parent.
        for i in range(1, size + 1):
            parent = i + (i & -i)
            if parent <= size:
                tree[parent] += tree[i]
        self._tree = tree

    def add(self, position, delta):
        i = position + 1
        tree = self._tree
        while i <= self.size:
            tree[i] += delta
            i += i & -i

    def prefix(self, end):
        """Sum over positions 0..end-1."""
        total = 0
        tree = self._tree
        i = end
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total


class GhostTracker:
    """Eviction queue and distance histogram of one VM's swap stream.

    Thread-safe: the swap daemon feeds events while memagg-compute ends
    periods.
    """

    _MIN_CAPACITY = 1024

    def __init__(self, bucket_mb=4, buckets=100, percentile=95.0,
                 page_size=PAGE_SIZE):
        if bucket_mb <= 0 or bucket_mb * MIB % page_size:
            raise ValueError('bucket_mb must be a positive whole number of '
                             'pages, not %r' % bucket_mb)
        if buckets <= 0:
            raise ValueError('buckets must be positive, not %r' % buckets)
        if not 0 < percentile <= 100:
            raise ValueError('percentile must be in (0, 100], not %r'
                             % percentile)
        self.bucket_pages = bucket_mb * MIB // page_size
        self.buckets = buckets
        self.percentile = percentile
        self.page_size = page_size
        self._lock = threading.Lock()
        self._seq_of = {}
        self._next_seq = 0
        self._tree = _Fenwick(self._MIN_CAPACITY)
        self._new_period()

    def _new_period(self):
        self._histogram = [0] * self.buckets
        self._swap_ins = 0
        self._unmatched = 0
        self._swap_outs = 0

    def __len__(self):
        """Pages in the eviction queue."""
        return len(self._seq_of)

    def swap_out(self, offset):
        """Page ``offset`` was evicted: it joins the queue's recent end."""
        with self._lock:
            self._swap_outs += 1
            old = self._seq_of.pop(offset, None)
            if old is not None:
                self._tree.add(old, -1)
            if self._next_seq >= self._tree.size:
                self._compact()
            seq = self._next_seq
            self._next_seq += 1
            self._seq_of[offset] = seq
            self._tree.add(seq, 1)

    def swap_in(self, offset):
        """Page ``offset`` was read back. Return its distance D in pages
        (counted in the histogram), or None when it was not queued."""
        with self._lock:
            seq = self._seq_of.pop(offset, None)
            if seq is None:
                self._unmatched += 1
                return None
            self._tree.add(seq, -1)
            # Pages still queued and evicted after this one; itself makes 1.
            distance = len(self._seq_of) - self._tree.prefix(seq + 1) + 1
            bucket = min(self.buckets - 1,
                         (distance - 1) // self.bucket_pages)
            self._histogram[bucket] += 1
            self._swap_ins += 1
            return distance

    def feed(self, events):
        """Apply (op, offset) events in order; op is SWAP_OUT or SWAP_IN."""
        for op, offset in events:
            if op == SWAP_OUT:
                self.swap_out(offset)
            elif op == SWAP_IN:
                self.swap_in(offset)
            else:
                raise ValueError('event op must be %r or %r, not %r'
                                 % (SWAP_OUT, SWAP_IN, op))

    def end_period(self):
        """Close the period: its GhostPeriod; the histogram starts anew."""
        with self._lock:
            period = GhostPeriod(
                swap_ins=self._swap_ins, unmatched_swap_ins=self._unmatched,
                swap_outs=self._swap_outs,
                distance_pages=self._covering_distance(),
                histogram=tuple(self._histogram), page_size=self.page_size)
            self._new_period()
            return period

    def _covering_distance(self):
        if not self._swap_ins:
            return None
        # The epsilon keeps e.g. 20 * 95 / 100 at 19, not 20.
        needed = max(1, math.ceil(self._swap_ins * self.percentile / 100
                                  - 1e-9))
        covered = 0
        for bucket, count in enumerate(self._histogram):
            covered += count
            if covered >= needed:
                return (bucket + 1) * self.bucket_pages
        raise AssertionError('histogram holds fewer swap-ins than counted')

    def _compact(self):
        """Renumber the queue 0..n-1 in eviction order into a tree with
        room for as many more evictions (amortised O(1) per eviction)."""
        ordered = sorted(self._seq_of.items(), key=lambda item: item[1])
        self._seq_of = {offset: i for i, (offset, _) in enumerate(ordered)}
        self._next_seq = len(ordered)
        capacity = max(self._MIN_CAPACITY, 2 * len(ordered))
        self._tree = _Fenwick(capacity, range(len(ordered)))
