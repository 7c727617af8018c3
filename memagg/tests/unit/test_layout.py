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

"""The unit tests' folders mirror the product's packages, so a reader finds
the tests of ``memagg/drivers/wss/ghost.py`` in
``memagg/tests/unit/drivers/wss/``; the exceptions test what lives outside
the memagg package."""
import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
UNIT = REPO_ROOT / 'memagg' / 'tests' / 'unit'
CLIENT = REPO_ROOT / 'python-memaggclient' / 'memaggclient'
# Test folders whose subject lives outside memagg/: the C code, DevStack's
# plug-in, and the client and its OpenStack client plug-in run against
# memagg's real API (the client's own tests, which need no server, are in
# python-memaggclient/memaggclient/tests).
OUTSIDE = {'native': REPO_ROOT / 'native',
           'devstack': REPO_ROOT / 'devstack',
           'client': CLIENT,
           'osc': CLIENT / 'osc'}


def test_every_test_folder_is_named_after_what_it_tests():
    stray = []
    for module in sorted(UNIT.rglob('test_*.py')):
        folder = module.parent.relative_to(UNIT)
        if folder == pathlib.Path('.'):
            continue
        subject = OUTSIDE.get(folder.parts[0])
        if subject is None:
            subject = REPO_ROOT / 'memagg' / folder
        else:
            subject = subject.joinpath(*folder.parts[1:])
        if not subject.is_dir():
            stray.append('%s: no %s' % (module.relative_to(REPO_ROOT),
                                        subject.relative_to(REPO_ROOT)))
    assert not stray, ('test modules go in the folder of the package they '
                       'test: %s' % '; '.join(stray))
