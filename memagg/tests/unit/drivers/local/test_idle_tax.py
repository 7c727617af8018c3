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

"""idle_tax (§2.2): Nt_i = N/n + τ (A_i − Ā), dynamic τ with slow decay
(f = 128 MiB, γ = 10), static τ 0.75."""
import pytest

from memagg.drivers.local import base
from memagg.drivers.local import idle_tax


def _vms(used, m_cur=(800, 800, 800)):
    return [base.VmMemory(uuid=uuid, m_init_mb=1024, m_cur_mb=cur,
                          wss_mb=a, wss_maxavg_mb=a, max_mb=4096)
            for uuid, a, cur in zip('abc', used, m_cur)]


def test_dynamic_tau_leaves_the_busiest_vm_f_free():
    policy = idle_tax.IdleTaxPolicy()

    # N = 2400, n = 3: N/n = 800; A = 200, 500, 800: Ā = 500, A_max = 800.
    # τ = (800 + 128 - 800) / (800 - 500) = 128/300.
    # Nt = 800 + τ (A - 500) = 672, 800, 928: sum 2400, c keeps 128 free.
    result = policy.compute(_vms([200, 500, 800]), 2400)

    assert policy.tau == pytest.approx(128 / 300)
    assert result.targets == {'a': 672, 'b': 800, 'c': 928}
    assert sum(result.targets.values()) == 2400
    assert result.reservoir_mb == 0


def test_tau_decays_slowly_and_rises_at_once():
    policy = idle_tax.IdleTaxPolicy()
    policy.compute(_vms([200, 500, 800]), 2400)

    # A = 350, 500, 650: τ_raw = (650 + 128 - 800) / 150 < 0 -> 0; below
    # τ_prev = 0.4267: τ = 0.4267 - 0.4267/10 = 0.384.
    # Nt = 800 + 0.384 * (-150, 0, 150) = 742.4, 800, 857.6.
    result = policy.compute(_vms([350, 500, 650], (672, 800, 928)), 2400)
    assert policy.tau == pytest.approx(0.9 * 128 / 300)
    assert result.targets == {'a': 742, 'b': 800, 'c': 858}
    assert sum(result.targets.values()) == 2400

    # Back to 200, 500, 800: τ_raw = 0.4267 > 0.384, taken at once.
    policy.compute(_vms([200, 500, 800], (742, 800, 858)), 2400)
    assert policy.tau == pytest.approx(128 / 300)


def test_tau_is_clamped_to_one():
    policy = idle_tax.IdleTaxPolicy()

    # N/n = 500, A = 300, 500, 700: τ_raw = (700 + 128 - 500)/200 = 1.64.
    # τ = 1: every VM gets A_i + (N/n - Ā) = A_i.
    result = policy.compute(_vms([300, 500, 700], (500, 500, 500)), 1500)

    assert policy.tau == 1.0
    assert result.targets == {'a': 300, 'b': 500, 'c': 700}


def test_equal_use_is_an_equal_split():
    policy = idle_tax.IdleTaxPolicy()

    result = policy.compute(_vms([500, 500, 500]), 2400)

    assert policy.tau == 0.0
    assert result.targets == {'a': 800, 'b': 800, 'c': 800}


def test_static_tau():
    policy = idle_tax.IdleTaxPolicy(base.PolicyParams(tau_mode='static'))

    # τ = 0.75: 800 + 0.75 * (-300, 0, 300) = 575, 800, 1025.
    result = policy.compute(_vms([200, 500, 800]), 2400)

    assert policy.tau == 0.75
    assert result.targets == {'a': 575, 'b': 800, 'c': 1025}
