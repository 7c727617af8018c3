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

"""A script of benchmarks/ run as CI runs it, for the tests that check
what it prints."""
import os
import subprocess
import sys

BENCHMARKS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                          os.pardir, 'benchmarks')


def run(script, *args, timeout=600):
    """benchmarks/``script`` run by this interpreter with ``args`` and no
    stdin; the subprocess.CompletedProcess, its output as text."""
    return subprocess.run([sys.executable, os.path.join(BENCHMARKS, script),
                           *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def assert_refused(run, message):
    """``run`` (a CompletedProcess) was a usage error: exit status 2 and
    one line ending with ``message`` last on stderr."""
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.splitlines()[-1].endswith(message), run.stderr


def table_rows(stdout, names, columns):
    """The rows of a benchmark's table in ``stdout``: lines of ``columns``
    '|'-separated columns whose first word is one of ``names``, as
    {name: [the words of each column]}."""
    rows = {}
    for line in stdout.splitlines():
        groups = [group.split() for group in line.split('|')]
        if len(groups) == columns and groups[0] and groups[0][0] in names:
            rows[groups[0][0]] = groups
    return rows
