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

"""What the memagg commands share: list commands' paging, sorting,
filters and columns, and how an item becomes a row."""
from cliff import columns as cliff_columns
from osc_lib.cli import format_columns
from osc_lib.command import command


class RoundedColumn(cliff_columns.FormattableColumn):
    """A float shown with two decimals in a table (a CPU utilisation of
    0.1234567890123 reads 0.12), and as it came in -f json and yaml."""

    def human_readable(self):
        return '%.2f' % self._value

    def machine_readable(self):
        return self._value


def _cell(value):
    """A value as a cell: lists and dicts readable in a table, floats
    rounded there, and the values as they came in -f json and yaml."""
    if isinstance(value, float):
        return RoundedColumn(value)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return format_columns.ListDictColumn(value)
        return format_columns.ListColumn(value)
    if isinstance(value, dict):
        return format_columns.DictColumn(value)
    return value


def show(item):
    """(columns, values) of ShowOne for an item: every field it has, in
    name order."""
    names = sorted(item)
    return names, [_cell(item[name]) for name in names]


def client(cmd):
    """The memagg Client of a command's OpenStack client."""
    return cmd.app.client_manager.memagg


class PluginCommand:
    """A mixin of every memagg command: its help ends, as cliff's does,
    by naming the distribution the command comes from, but without cliff's
    search for it.

    cliff finds that distribution with importlib.metadata's
    packages_distributions(), which reads the file list of every installed
    distribution, on every run, as it builds the command's parser: 0.15 s
    where a few hundred are installed, ten times what ``memagg host list``
    takes to list the hosts (benchmarks/osc_host_list.py). This plug-in
    knows its own.
    """

    def get_epilog(self):
        parts = [self._epilog or '']
        parts += [epilog for epilog in (hook.obj.get_epilog()
                                        for hook in self._hooks
                                        if hook.obj is not None)
                  if epilog is not None]
        parts.append('This command is provided by the python-memaggclient '
                     'plugin.')
        return '\n\n'.join(parts)


class ListCommand(PluginCommand, command.Lister):
    """A list of one of the API's collections.

    ``columns`` are shown by default, ``long_columns`` too with --long;
    a column a microversion below its own leaves out is not shown.
    ``filters`` are the API's filter names the command's options set
    (``add_filters`` adds the options, dest = the filter name).
    Without --limit every page is listed; with it, one page.
    """

    columns = ()
    long_columns = ()
    filters = ()
    marker_help = 'the last item of the previous page'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--limit', type=int, metavar='<n>',
            help='List one page of at most <n> items (the API caps it; '
                 'default: every page)')
        parser.add_argument(
            '--marker', metavar='<marker>',
            help='Start after %s' % self.marker_help)
        parser.add_argument(
            '--sort-key', metavar='<key>',
            help='Sort by this field (the API lists the keys it takes)')
        parser.add_argument('--sort-dir', choices=('asc', 'desc'),
                            help='Sort direction (default: asc)')
        parser.add_argument('--long', action='store_true',
                            help='Show more columns')
        self.add_filters(parser)
        return parser

    def add_filters(self, parser):
        """Add the options of ``filters``; none by default."""

    def fetch(self, parsed_args, **query):
        """The first page (a memaggclient.base.Page) for ``query``."""
        raise NotImplementedError

    def take_action(self, parsed_args):
        query = {name: getattr(parsed_args, name) for name in self.filters}
        page = self.fetch(parsed_args, limit=parsed_args.limit,
                          marker=parsed_args.marker,
                          sort_key=parsed_args.sort_key,
                          sort_dir=parsed_args.sort_dir, **query)
        items = page.items if parsed_args.limit else list(page.all_items())
        columns = list(self.columns)
        if parsed_args.long:
            columns += self.long_columns
        if items:
            columns = [c for c in columns if any(c in i for i in items)]
        return columns, ([_cell(item.get(c)) for c in columns]
                         for item in items)


class ShowCommand(PluginCommand, command.ShowOne):
    """Show one item: every field it has."""

    def fetch(self, parsed_args):
        """The item as a dict."""
        raise NotImplementedError

    def take_action(self, parsed_args):
        return show(self.fetch(parsed_args))
