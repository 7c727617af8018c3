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

"""weighted (§2.3): reclaim in 50 MiB chunks from the largest excess over
PA_i = ΣU · W_i / ΣW; floors hold; gold 4, silver 2, bronze 1."""
import pytest

from memagg.drivers.local import base
from memagg.drivers.local import weighted
from memagg.drivers.local import weights


def _vm(uuid, need, weight, max_mb=4096):
    return base.VmMemory(uuid=uuid, m_init_mb=1024, m_cur_mb=need,
                         wss_mb=need, wss_maxavg_mb=need, max_mb=max_mb,
                         weight=weight)


def test_reclaims_from_the_largest_excess():
    vms = [_vm('g', 1000, 'gold'), _vm('s', 1000, 'silver'),
           _vm('b', 1000, 'bronze')]

    # Need 3000 - 2900 = 100. ΣW = 7.
    # Step 1: U = 3000: EX = 1000 - 3000*4/7 = -714, 1000 - 857 = 143,
    # 1000 - 429 = 571: bronze gives 50.
    # Step 2: U = 2950: EX_s = 1000 - 843 = 157, EX_b = 950 - 421 = 529:
    # bronze gives 50 more.
    result = weighted.WeightedPolicy().compute(vms, 2900)

    assert result.targets == {'g': 1000, 's': 1000, 'b': 900}
    assert result.reservoir_mb == 0


def test_gold_is_reclaimed_only_after_bronze_is_at_its_floor():
    vms = [_vm('g', 1000, 'gold'), _vm('b', 400, 'bronze')]

    # Need 1400 - 1200 = 200; ΣW = 5.
    # U = 1400: EX_g = 1000 - 1120 = -120, EX_b = 400 - 280 = 120: b 350.
    # U = 1350: EX_g = -80, EX_b = 350 - 270 = 80: b 300.
    # U = 1300: EX_g = -40, EX_b = 40: b gives 300 - 256 = 44 (floor).
    # Need 56 left, only g above its floor: 50 then 6 -> 944.
    result = weighted.WeightedPolicy().compute(vms, 1200)

    assert result.targets == {'g': 944, 'b': 256}
    assert result.reservoir_mb == 0


def test_all_at_floors_leaves_the_host_overcommitted():
    vms = [_vm('g', 300, 'gold'), _vm('b', 300, 'bronze')]

    result = weighted.WeightedPolicy().compute(vms, 400)

    assert result.targets == {'g': 256, 'b': 256}
    assert result.reservoir_mb == -112


def test_enough_memory_gives_everyone_its_need_up_to_its_maximum():
    vms = [_vm('g', 1000, 'gold', max_mb=900), _vm('b', 600, None)]

    result = weighted.WeightedPolicy().compute(vms, 4096)

    assert result.targets == {'g': 900, 'b': 600}
    assert result.reservoir_mb == 4096 - 1500


def test_chunk_size_is_a_parameter():
    params = base.PolicyParams(reclaim_chunk_mb=10)
    vms = [_vm('s', 1000, 2), _vm('b', 1000, 1)]

    # Need 60; ΣW = 3. U = 2000: EX_s = 1000 - 1333 < 0, EX_b = 333: b
    # gives 10 at a time, six times; EX_b stays the largest (before the
    # last: 950 - 1950/3 = 300 against 1000 - 1300 = -300).
    result = weighted.WeightedPolicy(params).raw_targets(vms, 1940)

    assert result == {'s': 1000, 'b': 940}


@pytest.mark.parametrize('value, expected', [
    ('gold', 4.0), ('GOLD ', 4.0), ('silver', 2.0), ('bronze', 1.0),
    ('3', 3.0), (2.5, 2.5), (None, 1.0), ('', 1.0),
    # Unknown, zero or negative: the default, with a warning.
    ('platinum', 1.0), ('0', 1.0), (-2, 1.0), ('inf', 1.0),
])
def test_weight_resolution(value, expected):
    table = weights.parse_weights({'gold': '4', 'silver': '2',
                                   'bronze': '1'})

    assert weights.resolve_weight(value, table, 1.0) == expected


@pytest.mark.parametrize('mapping, message', [
    ({'gold': 'x'}, 'not a number'),
    ({'gold': '-1'}, 'not positive'),
    ({'gold': 'nan'}, 'not positive'),
    ({'': '1'}, 'empty class name'),
    (['gold'], 'not a mapping'),
])
def test_malformed_weights_are_refused(mapping, message):
    with pytest.raises(ValueError, match=message):
        weights.parse_weights(mapping)
