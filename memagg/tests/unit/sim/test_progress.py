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

"""memagg-sim's progress bar (memagg.sim.progress)."""
from memagg.sim import progress


def test_progress_bar_draws_and_ends_the_line(tmp_path):
    out = tmp_path / 'err'
    with open(out, 'w') as stream:
        bar = progress.Progress(4, stream, enabled=True, interval=0)
        for done in range(1, 5):
            bar.update(done)
        bar.close()
    with open(out, newline='') as stream:
        text = stream.read()

    assert '\r[' + '#' * 15 + '.' * 15 + ']  50% 2/4 steps' in text
    # Redrawn in place, the last state ending the line.
    assert '\n' not in text[:-1]
    assert text.endswith('] 100% 4/4 steps, 0 s, 0 s left \n')


def test_progress_bar_silent_when_disabled(tmp_path):
    out = tmp_path / 'err'
    with open(out, 'w') as stream:
        bar = progress.Progress(4, stream, enabled=False)
        bar.update(4)
        bar.close()

    assert out.read_text() == ''
