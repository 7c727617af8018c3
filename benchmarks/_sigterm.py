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

"""A benchmark stopped by SIGTERM (a timeout, kill) cleans up as after ^C:
its guests, swapds, schedulers and databases are ended by the code that
made them, where Python's default would end the process at once."""
import signal
import sys


def exit_on_sigterm():
    """From now on a SIGTERM raises SystemExit in the main thread, so
    every ``finally`` and ``with`` on its stack runs before the exit."""
    signal.signal(signal.SIGTERM,
                  lambda signum, frame: sys.exit('stopped by SIGTERM'))
