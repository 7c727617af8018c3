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

"""numpy and matplotlib are memagg's sim extra: without them memagg-sim
says how to get them in one line, and every other console script still
starts. They are hidden from a real process by a sitecustomize on
PYTHONPATH that refuses to import them, as on a host without the extra."""
import importlib.metadata
import os
import subprocess
import sys

import pytest

from memagg.tests.functional import service_procs

pytestmark = [pytest.mark.functional]

BLOCKER = '''
import sys


class Missing:
    """Finds numpy and matplotlib as absent, as pip without the extra."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split('.')[0] in ('numpy', 'matplotlib'):
            raise ModuleNotFoundError('No module named %r' % name, name=name)
        return None


sys.meta_path.insert(0, Missing)
'''


@pytest.fixture
def without_extra(tmp_path):
    """The environment of a process that cannot import the extra."""
    (tmp_path / 'sitecustomize.py').write_text(BLOCKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    probe = subprocess.run([sys.executable, '-c', 'import numpy'], env=env,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 1 and 'numpy' in probe.stderr
    return env


def test_memagg_sim_without_the_extra_says_how_to_install_it(
        without_extra, tmp_path):
    proc = subprocess.run(
        [os.path.join(service_procs.BIN_DIR, 'memagg-sim'), '--hosts', '2',
         '--output-dir', str(tmp_path / 'out')],
        env=without_extra, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert proc.stderr == (
        "memagg-sim: error: numpy is not installed; memagg-sim needs the "
        "sim extra: pip install 'memagg[sim]'\n")
    assert not (tmp_path / 'out').exists()


def test_the_other_console_scripts_import_without_the_extra(without_extra):
    modules = sorted(
        entry.module for entry in importlib.metadata.entry_points(
            group='console_scripts')
        if entry.dist.name == 'memagg')
    assert 'memagg.cmd.swapd' in modules and 'memagg.cmd.sim' in modules
    proc = subprocess.run(
        [sys.executable, '-c', 'import importlib, sys\n'
         'for name in sys.argv[1:]:\n'
         '    importlib.import_module(name)\n', *modules],
        env=without_extra, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
