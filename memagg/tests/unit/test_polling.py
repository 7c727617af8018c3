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

"""The tests' own waiting helpers (memagg/tests/polling.py)."""
import os
import signal
import subprocess
import sys

import pytest

from memagg.tests import polling


def test_wait_for_names_what_it_waited_for_and_the_last_value_seen():
    values = iter(range(1000000))
    with pytest.raises(AssertionError) as exc:
        polling.wait_for(lambda: next(values) < 0 and 1, 0.05,
                         interval=0.01, message='a negative number')
    assert 'a negative number not met within 0.05 s' in str(exc.value)
    assert 'last seen: False' in str(exc.value)


def test_gone_is_a_running_process_not_and_an_unreaped_zombie_yes():
    proc = subprocess.Popen([sys.executable, '-c', 'input()'],
                            stdin=subprocess.PIPE)
    try:
        assert not polling.gone(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        # Not reaped yet: a zombie, which has ended all the same.
        polling.wait_for(lambda: polling.gone(proc.pid), 10,
                         message='the killed child a zombie')
        assert os.waitid(os.P_PID, proc.pid,
                         os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    finally:
        proc.kill()
        proc.wait()
    assert polling.gone(proc.pid)


def test_gone_is_a_process_reaped_between_the_open_and_the_read(
        monkeypatch):
    class Reaped:
        """/proc/<pid>/stat of a process reaped once it was opened."""

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            raise ProcessLookupError(3, 'No such process')

    monkeypatch.setattr(polling, 'open', lambda path: Reaped(),
                        raising=False)
    assert polling.gone(12345)
