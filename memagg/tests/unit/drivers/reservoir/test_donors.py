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

"""Donor selection plug-ins (memagg.reservoir): hand-computed splits, the
consumer and too-small donors never picked, parameters checked, loading by
name through stevedore."""
import random

import pytest

from memagg.common import exceptions
from memagg.drivers.reservoir import base
from memagg.drivers.reservoir import donors

SLAB = 100
# Room in slabs of 100 MiB: a 3, b 10, c 5; d has less than one slab.
DONORS = [('a', 300), ('b', 1050), ('c', 500), ('d', 99)]


class ScriptedRng:
    """A random.Random whose sample() returns the pairs given, in turn."""

    def __init__(self, *pairs):
        self.pairs = list(pairs)
        self.asked = []

    def sample(self, population, k):
        assert k == 2
        self.asked.append(list(population))
        return list(self.pairs.pop(0))


def test_largest_first_splits_from_the_largest():
    assert donors.LargestFirst().select(12, SLAB, DONORS, 'x', None) == [
        ('b', 10), ('c', 2)]


def test_largest_first_never_picks_the_consumer_and_gives_what_there_is():
    assert donors.LargestFirst().select(12, SLAB, DONORS, 'b', None) == [
        ('c', 5), ('a', 3)]


def test_largest_first_breaks_ties_by_name():
    assert donors.LargestFirst().select(
        3, SLAB, [('z', 200), ('y', 200)], 'x', None) == [('y', 2), ('z', 1)]


def test_best_fit_takes_the_tightest_donor_holding_everything():
    assert donors.BestFit().select(4, SLAB, DONORS, 'x', None) == [('c', 4)]
    assert donors.BestFit().select(3, SLAB, DONORS, 'x', None) == [('a', 3)]


def test_best_fit_splits_largest_first_when_no_donor_holds_it():
    assert donors.BestFit().select(11, SLAB, DONORS, 'x', None) == [
        ('b', 10), ('c', 1)]


def test_power_of_two_takes_the_roomier_of_two_per_slab():
    rng = ScriptedRng(('a', 'b'), ('b', 'c'), ('c', 'a'))
    rooms = [('a', 300), ('b', 100), ('c', 200)]

    # a (3 > 1), then c (2 > 1), then a (2 > 1 left on c).
    assert donors.PowerOfTwo().select(3, SLAB, rooms, 'x', rng) == [
        ('a', 2), ('c', 1)]
    assert rng.asked == [['a', 'b', 'c']] * 3


def test_power_of_two_ties_go_to_the_first_drawn_and_a_last_donor_alone():
    rng = ScriptedRng(('a', 'b'))
    rooms = [('a', 100), ('b', 100)]

    # a by the tie; then b is the only donor left: no draw; then none.
    assert donors.PowerOfTwo().select(3, SLAB, rooms, 'x', rng) == [
        ('a', 1), ('b', 1)]
    assert rng.pairs == []


def test_power_of_two_in_chunks():
    rng = ScriptedRng(('b', 'a'), ('a', 'b'), ('a', 'b'))
    rooms = [('a', 500), ('b', 300)]

    # a 2 (5 > 3); a 2 (tie 3-3, first drawn); b 1 (3 > 1, one left).
    assert donors.PowerOfTwo({'chunk_slabs': 2}).select(
        5, SLAB, rooms, 'x', rng) == [('a', 4), ('b', 1)]


@pytest.mark.parametrize('seed', range(20))
def test_power_of_two_with_a_seeded_rng_respects_room_and_consumer(seed):
    rooms = [('h%d' % i, 100 * i) for i in range(6)]

    picked = donors.PowerOfTwo().select(8, SLAB, rooms, 'h5',
                                        random.Random(seed))

    assert sum(n for _, n in picked) == 8
    assert all(host != 'h5' and n <= int(host[1:]) for host, n in picked)
    # Of two drawn, the roomier wins: the first slab never goes to h1
    # when h4 is among three others.
    assert picked[0][0] != 'h1'


def test_power_of_two_is_repeatable_with_the_same_seed():
    first = donors.PowerOfTwo().select(20, SLAB, DONORS, 'x',
                                       random.Random(7))
    again = donors.PowerOfTwo().select(20, SLAB, DONORS, 'x',
                                       random.Random(7))

    assert first == again and sum(n for _, n in first) == 18


@pytest.mark.parametrize('plugin', [donors.PowerOfTwo, donors.LargestFirst,
                                    donors.BestFit])
def test_nothing_to_give(plugin):
    rng = random.Random(0)
    assert plugin().select(3, SLAB, [('a', 99), ('x', 1000)], 'x', rng) == []
    assert plugin().select(3, SLAB, [], 'x', rng) == []
    assert plugin().select(0, SLAB, DONORS, 'x', rng) == []


@pytest.mark.parametrize('plugin, params, field, detail', [
    (donors.PowerOfTwo, {'chunk_slabs': 0},
     '[reservoir] donor_selection_params.chunk_slabs', '1 or more'),
    (donors.PowerOfTwo, {'chunk': 2},
     '[reservoir] donor_selection_params.chunk', 'takes chunk_slabs'),
    (donors.LargestFirst, {'x': 1},
     '[reservoir] donor_selection_params.x', 'largest_first takes none'),
    (donors.BestFit, [1], '[reservoir] donor_selection_params',
     'JSON object'),
])
def test_bad_parameters_name_the_option(plugin, params, field, detail):
    with pytest.raises(exceptions.InvalidParameter) as error:
        plugin(params)

    assert error.value.kwargs['field'] == field
    assert detail in str(error.value)


def test_plugins_load_by_name(reservoir_plugins):
    assert reservoir_plugins == ['best_fit', 'largest_first',
                                 'power_of_two']
    assert isinstance(base.load('best_fit'), donors.BestFit)
    assert base.load('power_of_two', {'chunk_slabs': 3}).params == {
        'chunk_slabs': 3}


def test_an_unknown_plugin_names_the_option_and_the_choices(
        reservoir_plugins):
    with pytest.raises(exceptions.InvalidParameter) as error:
        base.load('first_fit')

    assert error.value.kwargs['field'] == '[reservoir] donor_selection'
    assert 'best_fit, largest_first, power_of_two' in str(error.value)
