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

"""Badis (§1.4): every transition of the V / VG / G state machine, the
pinned-page correction and its floor. Defaults: close ratio 0.9, 2 periods
to switch, min_margin 64 MiB, grow_step 128 MiB; m_cur is 1000 MiB."""
import pytest

from memagg.drivers.wss import badis
from memagg.drivers.wss import base
from memagg.drivers.wss import ghost

M_CUR = 1000
# 2048 pages of 4 KiB: m_ghost = 8 MiB.
SWAPPING = ghost.GhostPeriod(swap_ins=5, unmatched_swap_ins=0, swap_outs=5,
                             distance_pages=2048, histogram=())
QUIET = ghost.GhostPeriod(swap_ins=0, unmatched_swap_ins=0, swap_outs=0,
                          distance_pages=None, histogram=())


def _obs(fraction=None, period=QUIET, remote=True, **kwargs):
    sample = None
    if fraction is not None:
        sample = {'sampled': 1000, 'accessed': int(fraction * 1000),
                  'fraction': fraction}
    return base.Observation(uuid='vm', m_cur_mb=M_CUR, m_init_mb=1024,
                            max_mb=2048, sampler=sample, ghost=period,
                            has_remote_swap=remote, **kwargs)


def _step(estimator, *args, **kwargs):
    est = estimator.estimate(_obs(*args, **kwargs))
    return est.wss_mb, est.source, est.state


def _to_g(estimator):
    """V -> VG -> G: close sample, then two periods of swap-ins."""
    _step(estimator, 0.95)
    _step(estimator, 0.95, SWAPPING)
    _step(estimator, 0.95, SWAPPING)
    assert estimator.state == badis.G


def test_starts_in_v_with_the_sampler_plus_the_margin():
    estimator = badis.BadisEstimator()

    # 0.5 * 1000 + corr (starts at min_margin 64) = 564.
    assert _step(estimator, 0.5) == (564, 'sampler', 'V')


def test_v_to_vg_when_the_sampler_comes_within_the_ratio():
    estimator = badis.BadisEstimator()

    # 0.89 * 1000 = 890 < 900: still V, 890 + 64.
    assert _step(estimator, 0.89) == (954, 'sampler', 'V')
    # 0.95 * 1000 = 950 >= 900: VG at once; no swap-ins: the raw sampler.
    assert _step(estimator, 0.95) == (950, 'sampler', 'VG')


def test_vg_with_swap_ins_is_the_ghost_and_two_in_a_row_go_to_g():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.95)

    # m_cur + m_ghost = 1000 + 8.
    assert _step(estimator, 0.95, SWAPPING) == (1008, 'ghost', 'VG')
    assert _step(estimator, 0.95, SWAPPING) == (1008, 'ghost', 'G')
    assert not estimator.needs_sampler


def test_a_quiet_period_restarts_the_count_to_g():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.95)

    _step(estimator, 0.95, SWAPPING)
    _step(estimator, 0.95, QUIET)
    assert _step(estimator, 0.95, SWAPPING)[2] == 'VG'
    assert _step(estimator, 0.95, SWAPPING)[2] == 'G'


def test_vg_to_v_when_the_sampler_falls_below_the_ratio_without_swap_ins():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.95)

    # 0.8 * 1000 = 800 < 900, no swap-ins: V at once, 800 + 64.
    assert _step(estimator, 0.8) == (864, 'sampler', 'V')
    assert estimator.needs_sampler


def test_g_holds_without_swap_ins_and_returns_to_v_after_two():
    estimator = badis.BadisEstimator()
    _to_g(estimator)

    # G with swap-ins: the ghost (the sampler is off: no sample given).
    assert _step(estimator, None, SWAPPING) == (1008, 'ghost', 'G')
    # Quiet: m_cur is enough, hold it; the second quiet period ends G.
    assert _step(estimator, None, QUIET) == (M_CUR, 'hold', 'G')
    assert _step(estimator, None, QUIET) == (M_CUR, 'hold', 'V')
    # Back in V the sampler runs again: 0.5 * 1000 + 64.
    assert _step(estimator, 0.5) == (564, 'sampler', 'V')


def test_swap_ins_in_g_restart_the_count_to_v():
    estimator = badis.BadisEstimator()
    _to_g(estimator)

    _step(estimator, None, QUIET)
    _step(estimator, None, SWAPPING)
    assert _step(estimator, None, QUIET)[2] == 'G'
    assert _step(estimator, None, QUIET)[2] == 'V'


def test_pinned_page_correction_is_recorded_while_vg_swaps():
    estimator = badis.BadisEstimator()
    # f/n = 0.9 reaches the ratio; swapping with 10 % "cold" pages: they
    # are pinned. corr = 1000 * (1 - 0.9) = 100.
    _step(estimator, 0.9)
    _step(estimator, 0.9, SWAPPING)
    assert estimator.corr_mb == pytest.approx(100.0)

    # Sampler falls to 0.7, no swap-ins: V, 700 + corr 100.
    assert _step(estimator, 0.7) == (800, 'sampler', 'V')


def test_correction_is_refreshed_every_time_vg_swaps():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.9)
    _step(estimator, 0.9, SWAPPING)          # corr = 100
    _step(estimator, 0.9)                    # quiet: count restarts
    _step(estimator, 0.92, SWAPPING)         # corr = 1000 * 0.08 = 80

    assert estimator.corr_mb == pytest.approx(80.0)


def test_correction_is_floored_at_min_margin():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.97)
    # 1000 * (1 - 0.97) = 30 < 64: corr stays 64.
    _step(estimator, 0.97, SWAPPING)
    assert estimator.corr_mb == 64.0

    # 0.5 * 1000 + 64, never the raw 500.
    assert _step(estimator, 0.5) == (564, 'sampler', 'V')


def test_min_margin_is_a_parameter():
    estimator = badis.BadisEstimator(base.WssParams(min_margin_mb=0))

    assert _step(estimator, 0.5) == (500, 'sampler', 'V')


def test_without_remote_swap_the_stats_signal_grows_the_vm():
    estimator = badis.BadisEstimator()
    swapping = {'swap_in': 400.0, 'swap_out': 0.0, 'major_fault': 0.0}
    _step(estimator, 0.95, None, remote=False)

    # Shortage from swap-in 400 KiB/s: 1000 + grow_step 128.
    est = estimator.estimate(_obs(0.95, None, remote=False,
                                  stats_rates=swapping))
    assert (est.wss_mb, est.source, est.state) == (1128, 'grow', 'VG')
    assert est.shortage


def test_without_remote_swap_a_thrashing_vm_grows_from_v():
    estimator = badis.BadisEstimator()
    swapping = {'swap_in': 400.0, 'swap_out': 0.0, 'major_fault': 0.0}
    # Thrashing: the guest got through half its hot set; 0.5 < 0.9 is V.
    assert _step(estimator, 0.5, None, remote=False) == (564, 'sampler', 'V')

    # The shortage takes it to VG at once and grows it: 1000 + 128.
    est = estimator.estimate(_obs(0.5, None, remote=False,
                                  stats_rates=swapping))
    assert (est.wss_mb, est.source, est.state) == (1128, 'grow', 'VG')
    # corr = 1000 * (1 - 0.5) = 500, recorded while VG swaps.
    assert estimator.corr_mb == 500


def test_with_remote_swap_v_waits_for_the_sampler_ratio():
    estimator = badis.BadisEstimator()
    swapping = {'swap_in': 400.0, 'swap_out': 0.0, 'major_fault': 0.0}

    # The ghost, not the stats, is the signal for a VM with remote swap:
    # no swap-ins there, 0.5 < 0.9, so V: 500 + 64.
    est = estimator.estimate(_obs(0.5, QUIET, stats_rates=swapping))
    assert (est.wss_mb, est.source, est.state) == (564, 'sampler', 'V')


def test_remote_swap_ins_without_a_distance_grow_the_vm():
    estimator = badis.BadisEstimator()
    unmatched = ghost.GhostPeriod(swap_ins=0, unmatched_swap_ins=3,
                                  swap_outs=0, distance_pages=None,
                                  histogram=())
    _step(estimator, 0.95)

    assert _step(estimator, 0.95, unmatched) == (1128, 'grow', 'VG')


def test_without_a_sampler_the_guest_stats_stand_in():
    estimator = badis.BadisEstimator()
    # available 1000 MiB - usable 500 MiB = 500 used, + 64.
    est = estimator.estimate(_obs(None, stats={'available': 1000 * 1024,
                                               'usable': 500 * 1024}))

    assert (est.wss_mb, est.source, est.state) == (564, 'stats', 'V')


def test_nothing_to_go_on_is_invalid():
    est = badis.BadisEstimator().estimate(_obs(None))

    assert est.wss_mb is None
    assert est.state == 'V'


# The guest's used memory by its balloon statistics: 800 MiB, page cache
# included, far above what the sampler measures (and below the ratio).
USED_800 = {'available': 1000 * 1024, 'usable': 200 * 1024}


def test_one_lost_window_holds_the_last_sampler_estimate_not_the_stats():
    estimator = badis.BadisEstimator()
    assert _step(estimator, 0.5, stats=USED_800) == (564, 'sampler', 'V')

    # The window of this period was lost (the sampler could not re-arm):
    # the last window's 500 + 64, not the stats' 800 + 64.
    assert _step(estimator, None, stats=USED_800) == (564, 'held', 'V')
    # The sampler is back.
    assert _step(estimator, 0.3, stats=USED_800) == (364, 'sampler', 'V')


def test_a_held_sample_keeps_vg_and_its_raw_value():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.95)

    assert _step(estimator, None, stats=USED_800) == (950, 'held', 'VG')


def test_two_lost_windows_in_a_row_fall_back_to_the_stats():
    estimator = badis.BadisEstimator()
    _step(estimator, 0.5, stats=USED_800)
    _step(estimator, None, stats=USED_800)

    # No sampler two periods running: as for a VM without one.
    assert _step(estimator, None, stats=USED_800) == (864, 'stats', 'V')


def test_nothing_is_held_across_g():
    estimator = badis.BadisEstimator()
    _to_g(estimator)
    _step(estimator, None, QUIET)
    assert _step(estimator, None, QUIET)[2] == 'V'

    # Back in V, the first window lost: the sample from before G is stale.
    assert _step(estimator, None, stats=USED_800) == (864, 'stats', 'V')
