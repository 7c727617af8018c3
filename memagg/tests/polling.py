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
