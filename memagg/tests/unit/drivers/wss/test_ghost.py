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

"""GhostTracker (§1.3) on recorded and generated swap streams; the
estimator built on it is in test_swap_ghost."""
import collections
import random

import pytest

from memagg.drivers.wss import ghost

MIB = 1024 * 1024


def _small_buckets(buckets=100, percentile=95.0):
    # 1 MiB "pages": a 4 MiB bucket holds distances 1-4, 5-8, ...
    return ghost.GhostTracker(bucket_mb=4, buckets=buckets,
                              percentile=percentile, page_size=MIB)


def test_distance_counts_pages_evicted_after_it_plus_one():
    tracker = ghost.GhostTracker()
    tracker.feed([('out', 'A'), ('out', 'B'), ('out', 'C'), ('out', 'D')])

    # Queue A B C D (D most recent). B: C and D evicted after it -> 2 + 1.
    assert tracker.swap_in('B') == 3
    # D is the most recent: one more page would have kept it.
    assert tracker.swap_in('D') == 1
    # A: B and D are gone, C remains after it -> 1 + 1.
    assert tracker.swap_in('A') == 2
    # Never evicted: no distance.
    assert tracker.swap_in('X') is None
    assert len(tracker) == 1

    period = tracker.end_period()
    assert (period.swap_ins, period.unmatched_swap_ins,
            period.swap_outs) == (3, 1, 4)


def test_re_eviction_moves_an_offset_to_the_recent_end():
    tracker = ghost.GhostTracker()
    # A evicted, B evicted, A read back and evicted again: queue B A.
    tracker.feed([('out', 'A'), ('out', 'B'), ('out', 'A')])

    assert tracker.swap_in('B') == 2
    assert len(tracker) == 1


def _lru_stream(k_pages, cache_pages, cycles):
    """Swap events of an LRU memory of ``cache_pages`` pages running a
    cyclic access over ``k_pages`` pages: a miss reads the page back
    (swap-in) and evicts the least recently used page (swap-out)."""
    cache = collections.OrderedDict()
    evicted = set()
    events = []
    for _ in range(cycles):
        for page in range(k_pages):
            if page in cache:
                cache.move_to_end(page)
                continue
            if page in evicted:
                events.append(('in', page * 4096))
                evicted.discard(page)
            if len(cache) == cache_pages:
                victim, _ = cache.popitem(last=False)
                events.append(('out', victim * 4096))
                evicted.add(victim)
            cache[page] = True
    return events


def test_cyclic_access_gives_distance_k_minus_m():
    # K = 3000 pages cycled through M = 1000 resident pages: every page is
    # re-read after K - M = 2000 other pages were evicted after it, so
    # 2000 more pages would have kept it resident.
    k_pages, cache_pages = 3000, 1000
    tracker = ghost.GhostTracker()
    distances = []
    for op, offset in _lru_stream(k_pages, cache_pages, cycles=3):
        if op == 'out':
            tracker.swap_out(offset)
        else:
            distances.append(tracker.swap_in(offset))

    # Cycles 2 and 3 re-read all 3000 pages.
    assert len(distances) == 2 * k_pages
    assert set(distances) == {k_pages - cache_pages}
    period = tracker.end_period()
    # 2000 pages fall in bucket 1 (1025..2048 pages of 4 KiB = 4..8 MiB);
    # its upper edge 2048 pages = 8 MiB is the 95th percentile.
    assert period.histogram[1] == 2 * k_pages
    assert period.distance_pages == 2048
    assert period.ghost_mb == 8.0


def _swap_in_at(tracker, distance, label):
    """Evict ``label``, then distance - 1 fresh pages, then read it back."""
    tracker.swap_out(label)
    for i in range(distance - 1):
        tracker.swap_out((label, i))
    assert tracker.swap_in(label) == distance


def test_percentile_is_the_smallest_bucket_edge_covering_95_percent():
    tracker = _small_buckets()
    # 19 swap-ins at distance 3 (bucket 0: 1-4 MiB) and one at 22
    # (bucket 5: 21-24). 95 % of 20 = 19, covered by bucket 0: D = 4 pages.
    for i in range(19):
        _swap_in_at(tracker, 3, 'a%d' % i)
    _swap_in_at(tracker, 22, 'b')

    period = tracker.end_period()

    assert period.histogram[0] == 19 and period.histogram[5] == 1
    assert period.distance_pages == 4
    assert period.ghost_mb == 4.0


def test_percentile_reaches_the_tail_when_it_holds_over_5_percent():
    tracker = _small_buckets()
    # 18 at distance 3, 2 at distance 22: 19 needed, bucket 0 holds 18, so
    # bucket 5 is the smallest covering: D = 6 * 4 = 24 pages.
    for i in range(18):
        _swap_in_at(tracker, 3, 'a%d' % i)
    for i in range(2):
        _swap_in_at(tracker, 22, 'b%d' % i)

    assert tracker.end_period().distance_pages == 24


def test_distances_beyond_the_histogram_count_in_the_last_bucket():
    tracker = _small_buckets(buckets=3)
    # Buckets cover 1-4, 5-8, 9-12 pages; distance 50 lands in the last.
    _swap_in_at(tracker, 50, 'far')

    period = tracker.end_period()

    assert period.histogram == (0, 0, 1)
    assert period.distance_pages == 12


def test_end_period_resets_the_histogram_but_keeps_the_queue():
    tracker = ghost.GhostTracker()
    tracker.feed([('out', 1), ('out', 2), ('out', 3), ('in', 1)])
    first = tracker.end_period()

    second = tracker.end_period()

    assert first.swap_ins == 1 and first.distance_pages == 1024
    assert second.swap_ins == 0
    assert second.distance_pages is None and second.ghost_mb is None
    assert sum(second.histogram) == 0
    # 2 and 3 are still queued: 2 has 3 after it.
    assert tracker.swap_in(2) == 2


def test_fenwick_distances_match_a_list_scan_across_compactions():
    rng = random.Random(7)
    tracker = ghost.GhostTracker()
    queue = []
    checked = 0
    # 20000 events on 3000 offsets: the tree is renumbered many times.
    for _ in range(20000):
        offset = rng.randrange(3000)
        if rng.random() < 0.6:
            if offset in queue:
                queue.remove(offset)
            queue.append(offset)
            tracker.swap_out(offset)
        else:
            expected = None
            if offset in queue:
                expected = len(queue) - queue.index(offset)
                queue.remove(offset)
            assert tracker.swap_in(offset) == expected
            checked += expected is not None
    assert checked > 1000
    assert len(tracker) == len(queue)


def test_bad_event_and_parameters_are_refused():
    tracker = ghost.GhostTracker()
    with pytest.raises(ValueError, match="'out' or 'in'"):
        tracker.feed([('write', 0)])
    with pytest.raises(ValueError, match='percentile'):
        ghost.GhostTracker(percentile=0)
    with pytest.raises(ValueError, match='buckets'):
        ghost.GhostTracker(buckets=0)
