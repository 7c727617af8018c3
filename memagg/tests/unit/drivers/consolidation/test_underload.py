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

"""Underload detectors against hand-computed cases (ALGORITHMS.md §3.1)."""
import pytest

from memagg.common import exceptions
from memagg.drivers.consolidation import base
from memagg.drivers.consolidation import underload


def test_threshold_default_is_one_half():
    det = underload.Threshold()
    assert det.params == {'threshold': 0.5}
    # Only the last value counts: 0.5 <= 0.5, 0.51 > 0.5.
    assert det.is_underloaded([0.9, 0.9, 0.5])
    assert not det.is_underloaded([0.1, 0.1, 0.51])
    assert not det.is_underloaded([])


def test_threshold_parameter():
    det = underload.Threshold({'threshold': 0.3})
    assert det.is_underloaded([0.3])
    assert not det.is_underloaded([0.31])


def test_last_n_average_defaults_to_two_values_and_one_half():
    det = underload.LastNAverage()
    assert det.params == {'threshold': 0.5, 'n': 2}
    # (0.4 + 0.6) / 2 = 0.5 <= 0.5; the 0.9 before is outside the window.
    assert det.is_underloaded([0.9, 0.4, 0.6])
    # (0.4 + 0.7) / 2 = 0.55 > 0.5
    assert not det.is_underloaded([0.0, 0.4, 0.7])


def test_last_n_average_short_history_averages_what_there_is():
    det = underload.LastNAverage({'threshold': 0.3, 'n': 3})
    assert det.is_underloaded([0.3])
    # (0.2 + 0.5) / 2 = 0.35 > 0.3
    assert not det.is_underloaded([0.2, 0.5])
    # (0.1 + 0.2 + 0.5) / 3 = 0.2667 <= 0.3
    assert det.is_underloaded([0.9, 0.1, 0.2, 0.5])
    assert not det.is_underloaded([])


def test_never():
    det = underload.Never()
    assert not det.is_underloaded([0.0, 0.0, 0.0])
    with pytest.raises(exceptions.InvalidParameter) as err:
        underload.Never({'threshold': 0.1})
    assert err.value.kwargs['field'] == 'underload.never.threshold'


def test_invalid_parameters_name_the_key():
    with pytest.raises(exceptions.InvalidParameter) as err:
        underload.LastNAverage({'n': 0})
    assert err.value.kwargs['field'] == 'underload.last_n_average.n'


def test_host_needs_both_dimensions_by_default():
    det = underload.Threshold()
    assert underload.host_underloaded(det, det, [0.2], [0.3])
    # Idle CPU but memory 0.8 in use: emptying it would move a lot.
    assert not underload.host_underloaded(det, det, [0.2], [0.8])
    assert underload.host_underloaded(det, det, [0.2], [0.8],
                                      require='either') == ['cpu']
    assert not underload.host_underloaded(det, det, [0.7], [0.8],
                                          require='either')
    with pytest.raises(exceptions.InvalidParameter):
        underload.host_underloaded(det, det, [0.2], [0.3], require='all')


@pytest.mark.parametrize('name,cls', [
    ('threshold', underload.Threshold),
    ('last_n_average', underload.LastNAverage),
    ('never', underload.Never),
])
def test_entry_points(name, cls):
    det = base.load('underload', name)
    assert type(det) is cls


def test_loading_unknown_name_lists_the_family():
    with pytest.raises(exceptions.InvalidParameter) as err:
        base.load('underload', 'sometimes')
    assert 'last_n_average, never, threshold' in str(err.value)
