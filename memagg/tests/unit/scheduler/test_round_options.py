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

"""The round's control options: checked, typed, and their defaults."""
import dataclasses

import pytest

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.scheduler import consolidation as cons


def test_control_options_are_checked_and_typed(conf):
    algorithms = cons.load_algorithms(CONF.consolidation, {
        'fill_headroom_cpu': '0.25', 'fill_window': '12'})
    assert (algorithms.controls.fill_headroom_cpu,
            algorithms.controls.fill_window) == (0.25, 12)
    for name, value, words in (
            ('fill_headroom_cpu', 'much', 'must be a number'),
            ('fill_headroom_mem', 1.5, 'between 0.0 and 1.0'),
            ('fill_window', 2.5, 'must be an integer'),
            ('fill_window', 0, 'between 1 and 1000000'),
            ('fill_window', True, 'must be an integer')):
        with pytest.raises(exceptions.InvalidParameter) as err:
            cons.load_algorithms(CONF.consolidation, {name: value})
        assert "'[consolidation] %s'" % name in str(err.value)
        assert words in str(err.value)


def test_control_defaults(conf):
    controls = cons.load_algorithms(CONF.consolidation).controls
    assert dataclasses.asdict(controls) == {
        'fill_headroom_cpu': 0.02, 'fill_headroom_mem': 0.15,
        'fill_window': 576, 'migration_cooldown': 3600,
        'max_migrations_per_round': 100, 'max_migrations_per_host_hour': 40}
    assert CONF.consolidation.history_length == 576
