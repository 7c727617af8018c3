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

"""python-memaggclient installs anywhere: a wheel built from this directory
is pure Python (py3-none-any), holds the client's modules only, and
requires keystoneauth1, osc-lib, cliff and pbr, nothing of memagg's server.

Built offline (no index, no build isolation) with this environment's
setuptools, pbr and wheel, from a copy outside git (pbr then takes its
version from PBR_VERSION), so the run leaves nothing in the tree."""
import email.parser
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[2]
#: What the client requires, and all it may: a requirement the server has
#: and the client does not (a compiler's, libvirt's, oslo.messaging's...)
#: is what keeps an operator's laptop from installing the CLI.
REQUIRES = {'pbr', 'keystoneauth1', 'osc-lib', 'cliff'}
BUILD_TOOLS = ('setuptools', 'pbr', 'wheel')


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    """The path of a wheel built from a copy of this distribution."""
    missing = [tool for tool in BUILD_TOOLS
               if importlib.util.find_spec(tool) is None]
    if missing:
        message = ('building a wheel offline needs %s installed (test-'
                   'requirements.txt)' % ', '.join(missing))
        # CI installs them: there a missing one is a broken setup.
        if os.environ.get('CI', '').lower() in ('true', '1', 'yes'):
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp('wheel')
    source = tmp / 'python-memaggclient'
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
        'build', '*.egg-info', '__pycache__', 'AUTHORS', 'ChangeLog'))
    env = dict(os.environ, PBR_VERSION='1.0.0', PYTHONWARNINGS='ignore')
    built = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-index',
         '--no-build-isolation', '--wheel-dir', str(tmp / 'dist'),
         str(source)],
        capture_output=True, text=True, env=env, timeout=300,
        stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list((tmp / 'dist').glob('*.whl'))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_the_wheel_is_pure_python(wheel):
    assert wheel.name == 'python_memaggclient-1.0.0-py3-none-any.whl'
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        tags = email.parser.Parser().parsestr(
            archive.read('python_memaggclient-1.0.0.dist-info/WHEEL')
            .decode()).get_all('Tag')
    assert tags == ['py3-none-any']
    modules = [n for n in names if not n.startswith('python_memaggclient-')]
    assert modules and all(n.startswith('memaggclient/') and n.endswith('.py')
                           for n in modules), modules


def test_the_wheel_requires_nothing_of_the_server(wheel):
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.parser.Parser().parsestr(
            archive.read('python_memaggclient-1.0.0.dist-info/METADATA')
            .decode())
    requires = {re.match(r'[A-Za-z0-9._-]+', r).group(0)
                for r in metadata.get_all('Requires-Dist')}
    assert requires == REQUIRES
    assert metadata['Name'] == 'python-memaggclient'
