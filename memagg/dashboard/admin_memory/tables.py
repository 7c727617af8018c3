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

"""Admin → Memory's table of hosts: a Horizon DataTable whose sort,
filter and pages are the API's (GET /v1/host_usages, microversion 1.12),
so a page of a thousand-host cloud reads and draws one page of hosts.

The column headers are links that sort on the server (Horizon's own
header sort would only reorder the rows of one page); the filter is a
Horizon server filter; Prev and Next keep the sort.
"""
import urllib.parse

from django.template import loader
from django.utils import html
from django.utils.translation import gettext_lazy as _
from horizon import tables

#: The order of a page unless the query string asks for another.
DEFAULT_SORT = ('host', 'asc')
SORT_PARAM = 'sort'
DIR_PARAM = 'dir'


def _bar(row):
    return loader.render_to_string('memagg_dashboard/_host_bar.html',
                                   {'bar': row['bar']})


class HostFilterAction(tables.FilterAction):
    """Filters the API applies: part of a host's name, or its state."""

    filter_type = 'server'
    filter_choices = (('host_contains', _('Host name contains'), True),
                      ('state', _('State ='), True))


class HostsTable(tables.DataTable):
    """One row per host: its figures, each a sortable column, and a
    compact bar of them all."""

    host = tables.Column('host', verbose_name=_('Host'), sortable=False)
    state = tables.Column('state', verbose_name=_('State'), sortable=False)
    instances = tables.Column('instances', verbose_name=_('Instances'),
                              sortable=False)
    memory_mb = tables.Column('memory_mb', verbose_name=_('Physical (MiB)'),
                              sortable=False)
    booked_mb = tables.Column('booked_mb', verbose_name=_('Booked (MiB)'),
                              sortable=False)
    wss_maxavg_mb = tables.Column('wss_maxavg_mb',
                                  verbose_name=_('Σ WSS^maxavg (MiB)'),
                                  sortable=False)
    lent_mb = tables.Column('lent_mb', verbose_name=_('Lent (MiB)'),
                            sortable=False)
    borrowed_mb = tables.Column('borrowed_mb',
                                verbose_name=_('Borrowed (MiB)'),
                                sortable=False)
    free_reservoir_mb = tables.Column('free_reservoir_mb',
                                      verbose_name=_('Free reservoir (MiB)'),
                                      sortable=False)
    bar = tables.Column(_bar, verbose_name=_('Memory'), sortable=False,
                        classes=('memagg-bar-cell',))

    #: The columns a header link sorts by: the API's sort keys.
    SORT_KEYS = ('host', 'state', 'instances', 'memory_mb', 'booked_mb',
                 'wss_maxavg_mb', 'lent_mb', 'borrowed_mb',
                 'free_reservoir_mb')

    class Meta(object):
        name = 'hosts'
        verbose_name = _('Hosts')
        table_actions = (HostFilterAction,)

    def __init__(self, request, *args, sort=DEFAULT_SORT, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.sort = sort
        for name in self.SORT_KEYS:
            column = self.columns[name]
            ascending = sort != (name, 'asc')
            column.verbose_name = html.format_html(
                '<a class="memagg-sort" data-sort="{}" href="?{}">{}{}</a>',
                name, urllib.parse.urlencode({
                    SORT_PARAM: name,
                    DIR_PARAM: 'asc' if ascending else 'desc'}),
                column.verbose_name,
                ('' if sort[0] != name else
                 ' ▲' if sort[1] == 'asc' else ' ▼'))

    def get_object_id(self, datum):
        return datum['host']

    def _with_sort(self, marker):
        return marker + '&' + urllib.parse.urlencode(
            {SORT_PARAM: self.sort[0], DIR_PARAM: self.sort[1]})

    def get_pagination_string(self):
        return self._with_sort(super().get_pagination_string())

    def get_prev_pagination_string(self):
        return self._with_sort(super().get_prev_pagination_string())
