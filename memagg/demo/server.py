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

"""A server process the demo started (Keystone, Horizon): its log, and a
stop that does not wait for ever."""
import subprocess

STOP_TIMEOUT = 10


class Server:
    """A process ``proc`` writing its log to ``log_path``, serving at
    ``url``; stop() ends it."""

    def __init__(self, proc, log_path, url=None):
        self.proc = proc
        self.log_path = log_path
        self.url = url

    def log(self):
        """The tail of its log."""
        try:
            return self.log_path.read_text()[-4000:]
        except OSError:
            return ''

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_TIMEOUT s."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
