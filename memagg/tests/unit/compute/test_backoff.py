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

"""The back-off of memagg-compute's retried requests
(memagg/compute/backoff.py)."""
from memagg.compute import backoff as backoff_mod


def test_backoff_doubles_up_to_ten_intervals_and_resets():
    now = [0.0]
    backoff = backoff_mod.Backoff(60, clock=lambda: now[0])
    assert backoff.ready('k')
    assert [backoff.failed('k') for _ in range(6)] == [60, 120, 240, 480,
                                                       600, 600]
    assert not backoff.ready('k')
    now[0] = 599
    assert not backoff.ready('k')
    now[0] = 600
    assert backoff.ready('k')
    backoff.succeeded('k')
    assert backoff.failed('k') == 60
