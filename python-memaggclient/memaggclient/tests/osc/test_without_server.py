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

"""The ``openstack memagg`` commands where memagg's server cannot be
imported: an operator's laptop has the client and the OpenStack client,
not memagg, libvirt-python or oslo.messaging.

Each check runs in a subprocess whose sitecustomize (on PYTHONPATH) makes
importing those fail, so a command that reached for them would fail too,
however they came to be installed here."""
import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest

BIN_DIR = os.path.dirname(sys.executable)
OPENSTACK = os.path.join(BIN_DIR, 'openstack')
#: Top-level modules of memagg's server side that the client must never
#: need: memagg itself and the libraries only the services use.
BLOCKED = ('memagg', 'libvirt', 'oslo_messaging', 'oslo_db', 'sqlalchemy')

SITECUSTOMIZE = textwrap.dedent('''\
    import sys


    class Blocker:
        """Refuses the import of %(blocked)r and their submodules."""

        def find_spec(self, name, path=None, target=None):
            if name.partition('.')[0] in %(blocked)r:
                raise ImportError('%%s is not installed here' %% name)
            return None


    sys.meta_path.insert(0, Blocker())
    ''') % {'blocked': BLOCKED}


@pytest.fixture
def run(tmp_path):
    """run(*argv): argv in a subprocess that cannot import BLOCKED, with no
    OS_* variable and no clouds.yaml of this machine's user; the
    CompletedProcess."""
    if not os.path.exists(OPENSTACK):
        message = 'python-openstackclient is not installed'
        # CI installs it (test-requirements.txt): there its absence is a
        # broken setup.
        if os.environ.get('CI', '').lower() in ('true', '1', 'yes'):
            pytest.fail(message)
        pytest.skip(message)
    (tmp_path / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(PYTHONPATH=str(tmp_path), HOME=str(tmp_path))

    def run(*argv):
        return subprocess.run(argv, capture_output=True, text=True, env=env,
                              timeout=120, stdin=subprocess.DEVNULL)
    return run


def test_the_blocker_blocks(run):
    blocked = run(sys.executable, '-c', 'import memagg')

    assert blocked.returncode == 1
    assert 'ImportError: memagg is not installed here' in blocked.stderr


def test_the_plugin_and_every_command_load(run):
    script = textwrap.dedent('''\
        import importlib.metadata

        entries = importlib.metadata.entry_points(
            group='openstack.cli.extension', name='memagg')
        entries += importlib.metadata.entry_points(group='openstack.memagg.v1')
        for entry in entries:
            entry.load()
        print(len(entries))
        ''')
    loaded = run(sys.executable, '-c', script)

    assert loaded.returncode == 0, loaded.stderr
    commands = importlib.metadata.entry_points(group='openstack.memagg.v1')
    assert loaded.stdout == '%d\n' % (1 + len(commands))


def test_host_list_help(run):
    helped = run(OPENSTACK, 'memagg', 'host', 'list', '--help')

    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith('usage: openstack memagg host list')
    assert 'Failed to import plugin' not in helped.stderr


def test_host_list_reaches_for_the_api(run):
    # Nothing listens on port 1: the command gets as far as the request.
    listed = run(OPENSTACK, '--os-auth-type', 'none', '--os-endpoint',
                 'http://127.0.0.1:1', 'memagg', 'host', 'list')

    assert listed.returncode == 1
    assert 'the memagg API could not be reached' in listed.stderr
    assert 'Failed to import plugin' not in listed.stderr
