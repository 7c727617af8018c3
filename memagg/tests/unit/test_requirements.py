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

"""upper-constraints.txt pins every requirement memagg and its client
declare, at a version the requirement admits: setup.sh and tox install with
it, so a requirement it lacks or contradicts would install unpinned, or not
at all. The one exception is the client itself, which installs from this
tree and must not be pinned (a pin would send pip to an index for it).
"""
import configparser
import pathlib

from packaging import requirements
from packaging import utils

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
FILES = ('requirements.txt', 'test-requirements.txt', 'doc/requirements.txt',
         'python-memaggclient/requirements.txt')
#: Distributions of this tree: setup.sh installs them from their
#: directories.
LOCAL = {'memagg', 'python-memaggclient'}


def _lines(text):
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            yield line


def _declared():
    for name in FILES:
        for line in _lines((REPO_ROOT / name).read_text()):
            yield name, requirements.Requirement(line)
    setup = configparser.ConfigParser()
    setup.read(REPO_ROOT / 'setup.cfg')
    for extra, text in setup['extras'].items():
        for line in _lines(text):
            yield 'setup.cfg [extras] %s' % extra, requirements.Requirement(
                line)


def _pins():
    pins = {}
    for line in _lines((REPO_ROOT / 'upper-constraints.txt').read_text()):
        name, _, version = line.partition('==')
        assert version, ('upper-constraints.txt: %r is not NAME==VERSION'
                         % line)
        pins[utils.canonicalize_name(name)] = version
    return pins


def test_every_requirement_is_pinned_at_a_version_it_admits():
    pins = _pins()
    wrong = []
    for where, req in _declared():
        if req.name in LOCAL:
            continue
        pin = pins.get(utils.canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin, prereleases=True):
            wrong.append('%s: %s (pinned: %s)' % (where, req, pin))
    assert not wrong, ('upper-constraints.txt is stale; run '
                       './tools/setup.sh && ./tools/generate-constraints.sh:'
                       '\n' + '\n'.join(wrong))


def test_the_distributions_of_this_tree_are_not_pinned():
    assert not LOCAL & set(_pins())
