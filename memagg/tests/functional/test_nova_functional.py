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

"""memagg against a real Nova and Placement (memagg/tests/nova_functional),
run in an interpreter of its own (its package docstring says why); every
one of its tests must pass, none skipped."""
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from memagg.tests import source_counts

pytestmark = [pytest.mark.functional, pytest.mark.slow]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
TESTS = REPO_ROOT / 'memagg' / 'tests' / 'nova_functional'
RUN_TIMEOUT = 900


def test_memagg_with_a_real_nova_and_placement(tmp_path):
    report = tmp_path / 'junit.xml'
    env = dict(os.environ)
    env.pop('MEMAGG_NOVA_FUNCTIONAL', None)
    result = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '-p', 'memagg.tests.nova_functional.threading_mode',
         '--junitxml', str(report), str(TESTS)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL, env=env)

    output = (result.stdout + result.stderr)[-30000:]
    assert result.returncode == 0, output
    suite = ET.parse(report).getroot().find('testsuite')
    counts = {k: int(suite.get(k)) for k in
              ('tests', 'failures', 'errors', 'skipped')}
    assert counts == {
        'tests': source_counts.count_test_methods(TESTS), 'failures': 0,
        'errors': 0, 'skipped': 0}, output
