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
point's main() as its script calls it, with ``--help``, in a process of
its own (forked from one that imported them all once: each import costs
a second or two)."""
from importlib import metadata
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

SCRIPTS = sorted(ep.name for ep in metadata.entry_points(
    group='console_scripts') if ep.value.startswith('memagg.cmd.'))

# Loads every entry point, then forks a child per script that runs it as
# the console script's wrapper does (sys.argv, sys.exit(main())), its
# stdout and stderr into files; prints {script: [status, out, err]}.
HELP = """
import json
import os
import sys
import tempfile
from importlib import metadata

mains = {ep.name: ep.load() for ep in metadata.entry_points(
    group='console_scripts') if ep.name in sys.argv[1:]}
said = {}
with tempfile.TemporaryDirectory() as tmp:
    for name, main in mains.items():
        paths = [os.path.join(tmp, name + '.' + s) for s in ('out', 'err')]
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            for fd, path in zip((1, 2), paths):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT), fd)
            sys.argv = [name, '--help']
            try:
                status = main()
            except SystemExit as exc:
                status = exc.code
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status if isinstance(status, int) else 1)
        _, wait_status = os.waitpid(pid, 0)
        texts = []
        for path in paths:
            with open(path) as stream:
                texts.append(stream.read())
        said[name] = [os.waitstatus_to_exitcode(wait_status)] + texts
print(json.dumps(said))
"""


def _first_paragraph_after_usage(text):
    paragraphs = [p for p in text.split('\n\n') if p.strip()]
    assert paragraphs[0].startswith('usage: '), text
    return ' '.join(paragraphs[1].split())


def test_every_command_says_what_it_does():
    assert len(SCRIPTS) >= 8, SCRIPTS
    done = subprocess.run([sys.executable, '-c', HELP, *SCRIPTS],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert sorted(results) == SCRIPTS
    said = {}
    for name, (status, out, err) in results.items():
        assert status == 0, (name, err)
        said[name] = _first_paragraph_after_usage(out)
    for name, sentence in said.items():
        assert not sentence.endswith(':'), (name, sentence)
        assert sentence.endswith('.') and len(sentence) > 60, (
            name, sentence)
