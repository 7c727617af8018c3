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

"""memaggclient.osc.v1.base.PluginCommand: every command's help ends as
cliff would end it, naming python-memaggclient, without cliff's search of
every installed distribution for it."""
import importlib.metadata
import types

from cliff import command as cliff_command
import pytest

COMMANDS = sorted(importlib.metadata.entry_points(group='openstack.memagg.v1'),
                  key=lambda entry: entry.name)


def _command(entry):
    app = types.SimpleNamespace(command_manager=types.SimpleNamespace(
        namespace='openstack.cli'))
    return entry.load()(app, None, entry.name.replace('_', ' '))


@pytest.mark.parametrize('entry', COMMANDS, ids=[e.name for e in COMMANDS])
def test_the_epilog_is_cliffs_without_the_search(entry, monkeypatch):
    def search():
        raise AssertionError('every distribution searched')
    monkeypatch.setattr(cliff_command, 'packages_distributions', search)
    monkeypatch.setattr(cliff_command, '_dists_by_mods', None)
    command = _command(entry)

    epilog = command.get_parser('openstack ' + command.cmd_name).epilog

    # What cliff's own get_epilog says once it knows where memaggclient
    # comes from.
    monkeypatch.setattr(cliff_command, '_dists_by_mods',
                        {'memaggclient': 'python-memaggclient'})
    assert epilog == cliff_command.Command.get_epilog(command)
    assert epilog.endswith(
        'This command is provided by the python-memaggclient plugin.')
