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

"""openstack memagg audit create | list | show | execute."""
import json

from memaggclient.osc.v1 import base


def _parameter(text):
    """KEY=VALUE -> (KEY, VALUE), VALUE read as JSON when it is JSON (a
    number, true, an object) and as a string otherwise."""
    key, sep, value = text.partition('=')
    if not sep or not key:
        raise ValueError(text)
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


_parameter.__name__ = 'KEY=VALUE'


def _uuid_argument(parser):
    parser.add_argument('uuid', metavar='<uuid>', help='Audit UUID')


class CreateAudit(base.ShowCommand):
    """Start a consolidation round (microversion 1.2); the audit is
    pending, then planning, then recommended or failed."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--memory-basis', choices=('wss', 'booked'),
                            help='Pack VMs by working set or booked '
                                 'memory (default: [consolidation] '
                                 'memory_basis)')
        parser.add_argument('--auto-execute', action='store_true',
                            default=None,
                            help='Execute the plan as soon as it is made')
        parser.add_argument(
            '--parameter', type=_parameter, action='append',
            metavar='<key=value>', dest='parameters',
            help='Override a [consolidation] option for this round, e.g. '
                 'underload_require=either or underload_params=\'{"cpu": '
                 '0.2}\' (repeat for several)')
        return parser

    def fetch(self, parsed_args):
        parameters = (dict(parsed_args.parameters)
                      if parsed_args.parameters else None)
        return base.client(self).audits.create(
            memory_basis=parsed_args.memory_basis,
            auto_execute=parsed_args.auto_execute, parameters=parameters)


class ListAudit(base.ListCommand):
    """List consolidation audits."""

    columns = ('uuid', 'state', 'memory_basis', 'created_at', 'finished_at')
    long_columns = ('auto_execute', 'reason', 'parameters', 'unplaced',
                    'updated_at')
    filters = ('state', 'since', 'until')
    marker_help = 'this audit UUID (the last of the previous page)'

    def add_filters(self, parser):
        parser.add_argument('--state', metavar='<state>',
                            help='Only audits in this state (pending, '
                                 'planning, recommended, executing, '
                                 'succeeded, partial, failed)')
        parser.add_argument('--since', metavar='<time>',
                            help='Only audits created at or after this ISO '
                                 '8601 time')
        parser.add_argument('--until', metavar='<time>',
                            help='Only audits created at or before this '
                                 'ISO 8601 time')

    def fetch(self, parsed_args, **query):
        return base.client(self).audits.list(**query)


class ShowAudit(base.ShowCommand):
    """Show an audit and its actions in execution order."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _uuid_argument(parser)
        return parser

    def fetch(self, parsed_args):
        return base.client(self).audits.get(parsed_args.uuid)


class ExecuteAudit(base.ShowCommand):
    """Execute a recommended audit's plan through Nova (microversion
    1.2)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        _uuid_argument(parser)
        return parser

    def fetch(self, parsed_args):
        return base.client(self).audits.execute(parsed_args.uuid)
