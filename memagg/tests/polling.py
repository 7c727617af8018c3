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

"""Waiting on a condition with a deadline: tests never sleep to sync."""
import time


def wait_for(predicate, timeout, interval=0.1, message='condition'):
    """Return ``predicate()``'s first truthy value; fail after ``timeout`` s.

    ``interval`` spaces the polls so a poll of a database or a log file does
    not spin.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('%s not met within %s s' % (message, timeout))
        time.sleep(interval)
