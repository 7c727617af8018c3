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

"""memagg.service: run()'s signal handling, in a process of its own; a
Service whose RPC server fails to start tries again until it stops."""
import logging
import subprocess
import sys
import textwrap

from memagg.common import retry
from memagg.common import rpc
from memagg import service
from memagg.tests.rpc_fixtures import fake_rpc  # noqa: F401

# A service whose thread receives the SIGTERM, as the kernel may hand a
# signal sent to the process to any of its threads.
_CHILD = textwrap.dedent('''
    import os
    import signal
    import threading

    from memagg import service


    def main_thread_asleep():
        with open('/proc/self/task/%d/stat' % os.getpid()) as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'S'


    def signal_this_thread():
        # Once run() waits (the main thread asleep), else the main thread
        # would take the signal on its way there.
        while not main_thread_asleep():
            pass
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)


    class Service:
        def start(self):
            threading.Thread(target=signal_this_thread).start()

        def stop(self):
            print('stopped', flush=True)


    service.run([Service()])
''')


def test_a_sigterm_taken_by_another_thread_still_stops_the_services():
    # Before, the main thread's untimed wait never ran the handler: the
    # child would hang until the timeout below.
    done = subprocess.run([sys.executable, '-c', _CHILD],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, 'stopped\n'), done.stderr


def test_an_rpc_server_that_fails_to_start_is_tried_again(
        fake_rpc, sqlite_db, monkeypatch, caplog):  # noqa: F811
    # oslo.messaging gives up on some errors (a queue declared with other
    # arguments): the service makes a new server after a pause, the
    # pauses doubling, and serves once one starts.
    starts = []
    made = rpc.get_server

    def get_server(*args, **kwargs):
        server = made(*args, **kwargs)
        start = server.start

        def start_or_fail():
            starts.append(server)
            if len(starts) < 3:
                raise RuntimeError('PRECONDITION_FAILED')
            start()

        server.start = start_or_fail
        return server

    monkeypatch.setattr(rpc, 'get_server', get_server)
    monkeypatch.setattr(service, '_CONNECT_RETRIES', retry.Policy(
        attempts=None, interval=0.1, doubling=True))
    svc = service.Service('memagg-test', 'memagg-test',
                          service.Manager(host='node-a'))
    with caplog.at_level(logging.WARNING, logger=retry.__name__):
        svc.start()
        try:
            assert svc.connected.wait(10), starts
        finally:
            svc.stop()
    assert len(starts) == 3 and len(set(map(id, starts))) == 3
    waits = [r.getMessage() for r in caplog.records
             if r.name == retry.__name__]
    assert [w.split('; ')[1] for w in waits] == [
        'trying again in 0.1 s: PRECONDITION_FAILED',
        'trying again in 0.2 s: PRECONDITION_FAILED'], waits
    assert waits[0].startswith('memagg-test starting its RPC server failed '
                               '(attempt 1 of unlimited)'), waits


def test_a_stop_ends_the_retries_of_a_server_start(
        fake_rpc, sqlite_db, monkeypatch):  # noqa: F811
    def get_server(*args, **kwargs):
        raise RuntimeError('PRECONDITION_FAILED')

    monkeypatch.setattr(rpc, 'get_server', get_server)
    svc = service.Service('memagg-test', 'memagg-test',
                          service.Manager(host='node-a'))
    svc.start()
    svc.stop()
    # stop() does not join the RPC thread (oslo.messaging's reconnect loop
    # cannot be interrupted), but a wait between attempts ends at once:
    # the thread ends well before the next attempt, a second later.
    svc._rpc_thread.join(10)
    assert not svc._rpc_thread.is_alive()
    assert not svc.connected.is_set()
