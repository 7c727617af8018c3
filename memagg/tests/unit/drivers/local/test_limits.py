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

"""The limits every local policy's targets go through (§2): floor
min_guest_mb 256, the VM's maximum, step cap max_step_mb 512, deadband
deadband_mb 10 (but for a growth to the booked size or maximum); and the
reservoir."""
import pytest

from memagg.drivers.local import base


class _Fixed(base.LocalPolicy):
    """Raw targets given by the test."""

    name = 'fixed'

    def __init__(self, raw, params=None):
        super().__init__(params)
        self.raw = raw

    def raw_targets(self, vms, host_budget_mb):
        return {vm.uuid: self.raw for vm in vms}


def _vm(m_cur, max_mb=4096, **kwargs):
    kwargs.setdefault('wss_mb', None)
    kwargs.setdefault('wss_maxavg_mb', None)
    return base.VmMemory(uuid='vm', m_init_mb=1024, m_cur_mb=m_cur,
                         max_mb=max_mb, **kwargs)


@pytest.mark.parametrize('raw, m_cur, max_mb, expected', [
    # Floor: 100 -> 256 (300 - 256 = 44 moves, over the deadband).
    (100, 300, 4096, 256),
    # A VM whose maximum is under the floor: its maximum is the floor.
    (50, 128, 128, 128),
    # Ceiling: 2100 -> max 2048.
    (2100, 2000, 2048, 2048),
    # Step cap: 2000 -> 256 would move 1744; capped at 2000 - 512.
    (256, 2000, 4096, 1488),
    (3000, 1000, 4096, 1512),
    # Deadband: 1009 - 1000 = 9 < 10 is not applied; 10 is.
    (1009, 1000, 4096, 1000),
    (991, 1000, 4096, 1000),
    (1010, 1000, 4096, 1010),
    # ... but for a growth to the booked size (m_init 1024) or the maximum,
    # however small: a guest grown to 1020 or 2045 is not held short of it.
    (1024, 1020, 4096, 1024),
    (2100, 2045, 2048, 2048),
    (1023, 1020, 4096, 1020),
    # A shrink to the floor stays within the deadband.
    (100, 260, 4096, 260),
    # Fractions round to the nearest MiB.
    (1199.6, 1000, 4096, 1200),
])
def test_limits(raw, m_cur, max_mb, expected):
    result = _Fixed(raw).compute([_vm(m_cur, max_mb)], 8192)

    assert result.targets == {'vm': expected}
    assert result.reservoir_mb == 8192 - expected


def test_limits_are_parameters():
    params = base.PolicyParams(min_guest_mb=512, deadband_mb=0,
                               max_step_mb=100)

    assert _Fixed(300, params).compute([_vm(600)], 8192).targets == {
        'vm': 512}
    assert _Fixed(1000, params).compute([_vm(600)], 8192).targets == {
        'vm': 700}
    assert _Fixed(601, params).compute([_vm(600)], 8192).targets == {
        'vm': 601}


def test_reservoir_may_be_negative_when_overcommitted():
    result = _Fixed(1000).compute([_vm(1000)], 900)

    assert result.reservoir_mb == -100


def test_no_vms_leave_the_whole_budget_in_the_reservoir():
    result = _Fixed(0).compute([], 4096)

    assert result.targets == {} and result.reservoir_mb == 4096


def test_a_vm_twice_is_refused():
    with pytest.raises(ValueError, match='once'):
        _Fixed(0).compute([_vm(1000), _vm(1000)], 4096)


@pytest.mark.parametrize('maxavg, raw, expected', [
    (800, 900, 900),     # growth on the raw WSS at once
    (800, 700, 800),     # shrinking on the max-average
    (None, 700, 700),
    (800, None, 800),
    (None, None, 1000),  # nothing known: hold m_cur
])
def test_demand(maxavg, raw, expected):
    assert _vm(1000, wss_mb=raw, wss_maxavg_mb=maxavg).demand_mb == expected
