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

"""Trying a failed call again: the one way memagg does it, on tenacity.

``call()`` runs a function until it returns, raises an error it is not to
be tried again for, or has used its attempts (then the last error is
raised), waiting between attempts as ``Policy`` says. With a ``stop``
event, a wait ends as soon as the event is set and ``Stopped`` is raised,
so that a service stopping is not held up by a retry. ``Policy.wait()``
gives the same waits to a caller that tries again later instead of
blocking (memagg-compute's requests, once a period).
"""
import time

from oslo_log import log as logging
import tenacity

LOG = logging.getLogger(__name__)


class Stopped(Exception):
    """The retries ended because their service is stopping."""


class Policy:
    """Up to ``attempts`` attempts (None: no limit), ``interval`` s apart,
    doubled after each failure when ``doubling``, at most
    ``max_interval`` s; with ``within``, no attempt starts more than
    ``within`` s after the first."""

    def __init__(self, attempts, interval, doubling=False, max_interval=None,
                 within=None):
        self.attempts = attempts
        self.within = within
        #: tenacity's wait strategy for these waits.
        if doubling:
            self.waits = tenacity.wait_exponential(
                multiplier=interval,
                **({} if max_interval is None else {'max': max_interval}))
        else:
            self.waits = tenacity.wait_fixed(interval)

    def wait(self, failures):
        """Seconds to wait after ``failures`` failures in a row."""
        state = tenacity.RetryCallState(None, None, (), {})
        state.attempt_number = failures
        return self.waits(state)

    def stop(self):
        """tenacity's stop condition for these attempts."""
        stops = [] if self.attempts is None else [
            tenacity.stop_after_attempt(self.attempts)]
        if self.within is not None:
            stops.append(tenacity.stop_after_delay(self.within))
        return tenacity.stop_any(*stops) if stops else tenacity.stop_never


def call(func, *args, what, policy, retry_on, except_for=(), stop=None,
         sleep=time.sleep, level=logging.WARNING):
    """``func(*args)``, tried again after an error of ``retry_on`` (an
    exception class or tuple) that is not one of ``except_for``, as
    ``policy`` says; ``what`` names the call in the line logged at
    ``level`` (WARNING; DEBUG where failures are expected) before each
    wait. Returns what ``func`` returns; raises its last error once
    the attempts are used or ``stop`` (a threading.Event) is set, at once
    an error it is not tried again for, and ``Stopped`` when ``stop`` is
    set during a wait."""

    def pause(seconds):
        if stop is None:
            sleep(seconds)
        elif stop.wait(seconds):
            raise Stopped(what)

    def log(state):
        LOG.log(level, '%s failed (attempt %d of %s); trying again in %.1f '
                's: %s', what, state.attempt_number,
                policy.attempts or 'unlimited', state.upcoming_sleep,
                state.outcome.exception())

    def again(exc):
        return isinstance(exc, retry_on) and not isinstance(exc, except_for)

    halt = policy.stop()
    if stop is not None:
        halt = tenacity.stop_any(halt, tenacity.stop_when_event_set(stop))
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(again), stop=halt,
        wait=policy.waits,
        sleep=pause, before_sleep=log, reraise=True)
    return retrying(func, *args)
