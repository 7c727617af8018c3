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

"""memagg.service.run's signal handling, in a process of its own."""
import subprocess
import sys
import textwrap

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
