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

"""memagg's one way of trying a failed call again
(memagg/common/retry.py)."""
import threading
import time

import pytest

from memagg.common import retry


class Flaky:
    """Raises ``errors`` in turn, then returns 'done'."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        self.args = args
        if self.errors:
            raise self.errors.pop(0)
        return 'done'


def test_a_call_is_tried_again_with_waits_doubling_up_to_the_cap():
    waits = []
    func = Flaky(OSError('1'), OSError('2'), OSError('3'), OSError('4'))
    policy = retry.Policy(5, 1.0, doubling=True, max_interval=6)
    assert retry.call(func, 'a', what='x', policy=policy, retry_on=OSError,
                      sleep=waits.append) == 'done'
    assert func.calls == 5 and func.args == ('a',)
    assert waits == [1.0, 2.0, 4.0, 6]


def test_the_last_error_is_raised_once_the_attempts_are_used():
    waits = []
    func = Flaky(*[OSError(str(i)) for i in range(5)])
    with pytest.raises(OSError, match='^2$'):
        retry.call(func, what='x', policy=retry.Policy(3, 0.5),
                   retry_on=OSError, sleep=waits.append)
    assert func.calls == 3 and waits == [0.5, 0.5]


def test_no_attempt_starts_after_the_policys_time():
    func = Flaky(*[OSError(str(i)) for i in range(1000)])
    started = time.monotonic()
    with pytest.raises(OSError):
        retry.call(func, what='x', retry_on=OSError, policy=retry.Policy(
            attempts=None, interval=0.05, within=0.2))
    # tenacity stops once an attempt fails at least ``within`` s after
    # the first began: never before, and after waits between attempts.
    assert time.monotonic() - started >= 0.2
    assert func.calls >= 2


def test_an_error_not_retried_is_raised_at_once():
    func = Flaky(KeyError('no'), OSError('later'))
    with pytest.raises(KeyError):
        retry.call(func, what='x', policy=retry.Policy(3, 0),
                   retry_on=OSError, sleep=lambda s: None)
    assert func.calls == 1


def test_an_excepted_subclass_is_not_tried_again():
    class Refused(OSError):
        pass

    func = Flaky(Refused('no'))
    with pytest.raises(Refused):
        retry.call(func, what='x', policy=retry.Policy(3, 0),
                   retry_on=OSError, except_for=Refused,
                   sleep=lambda s: None)
    assert func.calls == 1


def test_stop_ends_a_wait_at_once(monkeypatch):
    stop = threading.Event()
    func = Flaky(OSError('out'), OSError('out'))

    class Log:
        """The line logged before the wait: the service stops right
        then."""

        def log(self, *args):
            stop.set()

    monkeypatch.setattr(retry, 'LOG', Log())
    with pytest.raises(retry.Stopped):
        # Without the stop, an hour's wait.
        retry.call(func, what='x', policy=retry.Policy(None, 3600),
                   retry_on=OSError, stop=stop)
    assert func.calls == 1


def test_stop_set_before_a_failure_gives_up_with_that_error():
    stop = threading.Event()
    stop.set()
    func = Flaky(OSError('out'))
    with pytest.raises(OSError, match='out'):
        retry.call(func, what='x', policy=retry.Policy(None, 0),
                   retry_on=OSError, stop=stop)
    assert func.calls == 1


def test_the_policy_gives_its_waits_to_those_who_try_later():
    policy = retry.Policy(None, 60, doubling=True, max_interval=600)
    assert [policy.wait(n) for n in range(1, 7)] == [60, 120, 240, 480,
                                                     600, 600]
    assert retry.Policy(None, 5).wait(4) == 5
