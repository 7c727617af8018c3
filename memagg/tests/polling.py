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
    not spin. The failure names ``message`` and the last value
    ``predicate`` gave: what the test waited for and what it saw instead.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('%s not met within %s s; last seen: %s'
                                 % (message, timeout, _short(repr(value))))
        time.sleep(interval)


def gone(pid):
    """Whether process ``pid`` has ended: no such process, or a zombie its
    parent has not reaped yet (a daemon's parent may be anyone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except (FileNotFoundError, ProcessLookupError):
        # ProcessLookupError: it was reaped between the open and the read
        # (a CI rehearsal's libvirtd restart test failed on that).
        return True


def _short(text, limit=400):
    return text if len(text) <= limit else text[:limit] + '...'
