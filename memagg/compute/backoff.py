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

"""When a failed request is tried again: memagg-compute's requests to
memagg-scheduler for remote memory wait longer with each failure in a
row, so that a scheduler away is not asked every period. The waits are
memagg.common.retry's; the request is made again at a later period
instead of blocking this one.
"""
import time

from memagg.common import retry


class Backoff:
    """When each key's next try is due: after a failure ``interval`` s,
    doubling with each failure in a row up to ten times that."""

    def __init__(self, interval, clock=time.monotonic):
        self.clock = clock
        self._policy = retry.Policy(None, interval, doubling=True,
                                    max_interval=10 * interval)
        self._due = {}

    def ready(self, key):
        due = self._due.get(key)
        return due is None or self.clock() >= due[0]

    def failed(self, key):
        """Record a failure; return the seconds until the next try."""
        failures = self._due.get(key, (0, 0))[1] + 1
        wait = self._policy.wait(failures)
        self._due[key] = (self.clock() + wait, failures)
        return wait

    def succeeded(self, key):
        self._due.pop(key, None)
