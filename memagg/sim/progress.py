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

"""A one-line progress bar on a stream (stderr): done/total steps, elapsed
time and an estimate of the time left, redrawn at most every
``interval`` seconds."""
import time

WIDTH = 30


class Progress:
    """Progress of ``total`` units on ``stream``; silent unless
    ``enabled``."""

    def __init__(self, total, stream, enabled, label='steps',
                 interval=0.2):
        self.total = max(total, 1)
        self.stream = stream
        self.enabled = enabled
        self.label = label
        self.interval = interval
        self.started = time.monotonic()
        self._drawn = None
        self._done = 0

    def update(self, done):
        """Show ``done`` units finished."""
        self._done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if (self._drawn is not None and done < self.total
                and now - self._drawn < self.interval):
            return
        self._drawn = now
        elapsed = now - self.started
        share = min(done / self.total, 1.0)
        filled = int(share * WIDTH)
        left = (elapsed / share - elapsed) if share else 0.0
        self.stream.write('\r[%s%s] %3d%% %d/%d %s, %.0f s, %.0f s left '
                          % ('#' * filled, '.' * (WIDTH - filled),
                             int(share * 100), done, self.total,
                             self.label, elapsed, left))
        self.stream.flush()

    def close(self):
        """Draw the final state and end the line."""
        if not self.enabled:
            return
        self._drawn = None
        self.update(self._done)
        self.stream.write('\n')
        self.stream.flush()
