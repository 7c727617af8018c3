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

"""The Senpai controller on hand-worked periods."""
import pytest

from memagg.drivers.host_reclaim import base as controller_base
from memagg.drivers.host_reclaim import senpai


def _signals(promotions=0.0, psi=0.0, swapped=0.0, wss=1000, moving=False):
    return controller_base.Signals(
        uuid='vm', wss_maxavg_mb=wss, swapped_mb=swapped,
        promotions_per_min=promotions, psi_some=psi, balloon_moving=moving)


def test_senpai_grows_slowly_and_backs_off_multiplicatively():
    c = senpai.SenpaiController(controller_base.Params(
        promotion_slo=0.2, psi_some_max=5.0, grow_mb=32, backoff=0.5))
    # SLO: 0.2 % of 1000 MiB = 2 MiB = 512 pages a minute.
    assert c.slo_per_min(1000) == pytest.approx(512)
    assert c.limit_mb(_signals(swapped=0)) == 32
    assert c.limit_mb(_signals(swapped=32)) == 64
    assert c.limit_mb(_signals(swapped=64, promotions=500)) == 96
    # 600 pages a minute > 512: halved.
    assert c.limit_mb(_signals(swapped=96, promotions=600)) == 48
    assert c.limit_mb(_signals(swapped=90, promotions=513)) == 24
    # Pressure alone backs off too.
    assert c.limit_mb(_signals(swapped=24, psi=6.0)) == 12
    # The balloon goes first: held while it is lowered.
    assert c.limit_mb(_signals(swapped=12, moving=True)) == 12
    assert c.limit_mb(_signals(swapped=12)) == 44


def test_senpai_stays_within_grow_mb_of_what_is_out():
    c = senpai.SenpaiController(controller_base.Params(grow_mb=32))
    for _ in range(5):
        limit = c.limit_mb(_signals(swapped=10))
    # Nothing cold went out: the limit does not bank 5 x 32 MiB.
    assert limit == 42


def test_senpai_holds_without_a_wss_or_a_first_rate():
    c = senpai.SenpaiController()
    assert c.limit_mb(_signals(wss=None)) == 0
    assert c.limit_mb(_signals(promotions=None)) == 0
    assert c.limit_mb(_signals()) == 32
    c.forget('vm')
    assert c.limit_mb(_signals(promotions=None)) == 0
