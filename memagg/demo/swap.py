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

"""A swap file on the host, for as long as something needs one: host-side
reclaim pages a guest's idle memory out to the host's swap, and a host
without any (TESTBED.md: none here) gets a file of its own for the demo
and the tests. Root only."""
import os
import subprocess


class SwapFile:
    """A ``size_mb`` MiB swap file at ``path``: on() makes it and turns it
    on, off() turns it off and removes it."""

    def __init__(self, path, size_mb):
        self.path = path
        self.size_mb = size_mb
        self.is_on = False

    def on(self):
        """Make the file and swap on it (CalledProcessError when the
        filesystem or the kernel refuses; the file is then removed)."""
        try:
            subprocess.run(['fallocate', '-l', '%dM' % self.size_mb,
                            self.path], check=True, capture_output=True,
                           text=True)
            os.chmod(self.path, 0o600)
            subprocess.run(['mkswap', self.path], check=True,
                           capture_output=True, text=True)
            subprocess.run(['swapon', self.path], check=True,
                           capture_output=True, text=True)
        except BaseException:
            self._remove()
            raise
        self.is_on = True

    def off(self):
        """Swap off it (the pages in it come back first) and remove it."""
        try:
            if self.is_on:
                subprocess.run(['swapoff', self.path], check=True,
                               capture_output=True, text=True)
                self.is_on = False
        finally:
            # A file swapoff refused stays in use until the next boot;
            # unlinking it only hides its name.
            if not self.is_on:
                self._remove()

    def _remove(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
