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

"""The donor selection plug-ins: power_of_two, largest_first, best_fit."""
from memagg.drivers.reservoir import base


def _largest_first(request_slabs, room):
    """Split over the hosts with the most room first (ties by name)."""
    remaining = request_slabs
    for host in sorted(room, key=lambda h: (-room[h], h)):
        if remaining == 0:
            return
        count = min(room[host], remaining)
        remaining -= count
        yield host, count


class PowerOfTwo(base.DonorSelection):
    """The power of two choices: for every ``chunk_slabs`` slabs, sample two
    donors at random and take the one with more room (the only one left,
    when one is). Spreads grants over donors without a global sort, and
    never piles onto the emptiest host the way largest_first does."""

    name = 'power_of_two'
    PARAMS = {'chunk_slabs': (1, base.positive_int)}

    def _pick(self, request_slabs, room, rng):
        remaining = request_slabs
        chunk = self.params['chunk_slabs']
        while remaining > 0 and room:
            hosts = sorted(room)
            if len(hosts) == 1:
                host = hosts[0]
            else:
                first, second = rng.sample(hosts, 2)
                host = second if room[second] > room[first] else first
            count = min(chunk, remaining, room[host])
            remaining -= count
            room[host] -= count
            if room[host] == 0:
                del room[host]
            yield host, count


class LargestFirst(base.DonorSelection):
    """Hosts by room, most first; the request is split over as many as it
    takes."""

    name = 'largest_first'

    def _pick(self, request_slabs, room, rng):
        return _largest_first(request_slabs, room)


class BestFit(base.DonorSelection):
    """The host with the least room that still holds the whole request (one
    donor, and the big ones stay free for big requests); when none does,
    largest_first."""

    name = 'best_fit'

    def _pick(self, request_slabs, room, rng):
        fitting = [h for h in room if room[h] >= request_slabs]
        if fitting:
            host = min(fitting, key=lambda h: (room[h], h))
            return [(host, request_slabs)]
        return _largest_first(request_slabs, room)
