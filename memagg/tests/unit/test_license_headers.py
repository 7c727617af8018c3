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

"""Every source file states its licence, as OpenStack projects do: the
Apache-2.0 notice at its top (LICENSE has the whole text)."""
import pathlib
import subprocess

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
NOTICE = 'Licensed under the Apache License, Version 2.0'
SHELL_SCRIPTS = {'.ci/run', 'devstack/plugin.sh', 'devstack/settings',
                 'devstack/lib/memagg'}


def _sources():
    listed = subprocess.run(['git', 'ls-files'], cwd=REPO_ROOT,
                            capture_output=True, text=True)
    if listed.returncode:
        pytest.skip('not a git checkout: %s' % listed.stderr.strip())
    for name in listed.stdout.split():
        path = REPO_ROOT / name
        if (path.suffix in ('.py', '.c', '.h', '.sh')
                or name in SHELL_SCRIPTS) and path.exists():
            yield name, path


def test_every_source_file_carries_the_apache_notice():
    missing = [name for name, path in _sources()
               if path.read_text().strip()
               and NOTICE not in '\n'.join(path.read_text().splitlines()[:16])]
    assert not missing, ('no Apache-2.0 notice in the first lines of: %s '
                         '(copy the one at the top of memagg/__init__.py)'
                         % ', '.join(missing))


def test_the_license_is_apache_2():
    text = (REPO_ROOT / 'LICENSE').read_text()
    assert 'Apache License' in text and 'Version 2.0, January 2004' in text
