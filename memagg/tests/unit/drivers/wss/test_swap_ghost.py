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

"""The swap-ghost estimator: the VM's current memory plus the ghost
distance of its swap-ins (ALGORITHMS.md §1.3)."""
from memagg.drivers.wss import base
from memagg.drivers.wss import ghost
from memagg.drivers.wss import swap_ghost


def _obs(period, **kwargs):
    return base.Observation(uuid='vm', m_cur_mb=512, m_init_mb=1024,
                            max_mb=1024, ghost=period, has_remote_swap=True,
                            **kwargs)


def test_swap_ghost_estimator_is_current_plus_ghost():
    # 2048 pages of 4 KiB = 8 MiB beyond m_cur 512 MiB.
    period = ghost.GhostPeriod(swap_ins=10, unmatched_swap_ins=0,
                               swap_outs=12, distance_pages=2048,
                               histogram=())

    est = swap_ghost.SwapGhostEstimator().estimate(_obs(period))

    assert est.wss_mb == 520
    assert est.source == 'ghost'
    assert est.shortage


def test_swap_ghost_estimator_is_invalid_without_swap_ins():
    period = ghost.GhostPeriod(swap_ins=0, unmatched_swap_ins=0,
                               swap_outs=12, distance_pages=None,
                               histogram=())

    for obs in (_obs(period), _obs(None)):
        est = swap_ghost.SwapGhostEstimator().estimate(obs)
        assert est.wss_mb is None
        assert not est.shortage


def test_new_tracker_takes_the_histogram_parameters():
    params = base.WssParams(ghost_bucket_mb=8, ghost_buckets=10,
                            ghost_percentile=50.0)

    tracker = swap_ghost.new_tracker(params)

    assert (tracker.bucket_pages, tracker.buckets,
            tracker.percentile) == (2048, 10, 50.0)
