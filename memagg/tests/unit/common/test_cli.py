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

"""memagg.common.cli.say: a text and its newline in one write."""
from memagg.common import cli


class _Stdout:
    def __init__(self):
        self.writes = []
        self.flushed = 0

    def write(self, text):
        self.writes.append(text)

    def flush(self):
        self.flushed += 1


def test_a_line_and_its_newline_go_out_in_one_write(monkeypatch):
    # print() writes 'API: URL' and '\n' apart: memagg-aio's log line from
    # another thread once fell between them in CI, and the reader waiting
    # for the line never saw it whole.
    out = _Stdout()
    monkeypatch.setattr('sys.stdout', out)
    cli.say('running\nAPI: http://127.0.0.1:1/')
    assert out.writes == ['running\nAPI: http://127.0.0.1:1/\n']
    assert out.flushed == 1
