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

"""Every memagg command's --help says what it does before its options,
as the installed console scripts an operator types print it: each entry
point's main() as its script calls it, in a process of its own
(tools.run_script: forked from one that imported them all once)."""
from importlib import metadata

import pytest

from memagg.tests.unit.cmd import tools

pytestmark = pytest.mark.slow

SCRIPTS = sorted(ep.name for ep in metadata.entry_points(
    group='console_scripts') if ep.value.startswith('memagg.cmd.'))


def _first_paragraph_after_usage(text):
    paragraphs = [p for p in text.split('\n\n') if p.strip()]
    assert paragraphs[0].startswith('usage: '), text
    return ' '.join(paragraphs[1].split())


def test_every_command_says_what_it_does():
    assert len(SCRIPTS) >= 8, SCRIPTS
    said = {}
    for name in SCRIPTS:
        done = tools.run_script(name, '--help')
        assert done.returncode == 0, (name, done.stderr)
        said[name] = _first_paragraph_after_usage(done.stdout)
    for name, sentence in said.items():
        assert not sentence.endswith(':'), (name, sentence)
        assert sentence.endswith('.') and len(sentence) > 60, (
            name, sentence)
