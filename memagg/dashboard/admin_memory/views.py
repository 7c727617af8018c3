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

"""Admin → Memory: hosts, the cloud over time, instances, the reservoir
and its grants, and consolidation audits."""
import datetime

from django.contrib import messages
from django import http
from django import shortcuts
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views import generic
from horizon import exceptions
from horizon import tables as horizon_tables
from horizon.utils import functions

from memagg.dashboard.admin_memory import tables
from memagg.dashboard import api
from memagg.dashboard import charts
from memagg.dashboard import views

EXECUTE_RULE = 'memagg:audit:execute'
CREATE_RULE = 'memagg:audit:create'
MEMORY_BASES = ('wss', 'booked')


def _summary(memagg):
    """The cloud now. GET /v1/cloud_usage always sums a range too: the
    shortest one, as only now is shown."""
    until = timezone.now().replace(microsecond=0)
    return memagg.cloud_usage.get(
        since=until - datetime.timedelta(seconds=1), until=until,
        points=1)['now']


class IndexView(horizon_tables.DataTableView):
    """The cloud-wide summary and a page of hosts, sorted and filtered by
    the API."""

    table_class = tables.HostsTable
    template_name = 'memagg_dashboard/admin_index.html'
    page_title = _('Memory')

    def _sort(self):
        key = self.request.GET.get(tables.SORT_PARAM, tables.DEFAULT_SORT[0])
        direction = self.request.GET.get(tables.DIR_PARAM, 'asc')
        if (key not in tables.HostsTable.SORT_KEYS
                or direction not in ('asc', 'desc')):
            messages.error(self.request, _(
                'Hosts cannot be sorted by %(key)r %(dir)r: sort by one of '
                '%(keys)s, asc or desc.') % {
                'key': key, 'dir': direction,
                'keys': ', '.join(tables.HostsTable.SORT_KEYS)})
            return tables.DEFAULT_SORT
        return key, direction

    def get_table(self):
        if not hasattr(self, 'table'):
            self.table = self.table_class(self.request, sort=self._sort(),
                                          **self.kwargs)
        return self.table

    def get_data(self):
        table = self.get_table()
        self._prev = self._more = False
        try:
            rows, self._prev, self._more = api.host_page(
                api.client(self.request),
                functions.get_page_size(self.request), table.sort,
                marker=self.request.GET.get(
                    table._meta.pagination_param),
                prev_marker=self.request.GET.get(
                    table._meta.prev_pagination_param),
                **self.get_filters())
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to read the hosts\' memory.'))
            return []
        scale = charts.host_scale(rows)
        return [dict(row, bar=charts.host_bar(row, scale)) for row in rows]

    def has_prev_data(self, table):
        return self._prev

    def has_more_data(self, table):
        return self._more

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            context['summary'] = _summary(api.client(self.request))
        except Exception:
            exceptions.handle(self.request,
                              _('Unable to read the cloud\'s memory.'))
        return context


class CloudView(views.MemaggView):
    """The cloud over a chosen time range: memory booked, kept and freed,
    and the hosts that could have been emptied."""

    template_name = 'memagg_dashboard/cloud.html'
    page_title = _('Memory of the cloud')
    error_message = _('Unable to read the cloud\'s memory history.')

    def read(self, memagg):
        key, length = views.chosen_range(self.request, '1d')
        end = timezone.now().replace(microsecond=0)
        usage = memagg.cloud_usage.get(since=end - length, until=end)
        memory, hosts = charts.cloud(usage['history'], end - length, end)
        return {'usage': usage, 'range': key, 'ranges': charts.RANGES,
                'memory_chart': memory, 'hosts_chart': hosts}


class InstancesView(views.MemaggView):
    """Every instance, a page at a time."""

    template_name = 'memagg_dashboard/admin_instances.html'
    page_title = _('Instances\' memory')
    error_message = _('Unable to list the instances.')

    def read(self, memagg):
        return {'instances': self.page(memagg.instances.list)}


class InstanceView(views.InstanceView):
    """Any instance over time."""

    index_url = 'horizon:admin:memory:instances'


class ReservoirView(views.MemaggView):
    """What each host has free, lends and borrows, and the grants with
    their donors, slabs and instances by name."""

    template_name = 'memagg_dashboard/reservoir.html'
    page_title = _('Memory reservoir')
    error_message = _('Unable to read the reservoir.')

    def read(self, memagg):
        grants = self.page(memagg.grants.list)
        grants['rows'] = api.with_donors(memagg, grants['rows'])
        names = api.instance_names(
            memagg, [g['consumer_host'] for g in grants['rows']])
        for grant in grants['rows']:
            grant['instance_name'] = names.get(grant['instance_uuid'])
        return {'reservoir': memagg.reservoir.get(), 'grants': grants}


class AuditsView(views.MemaggView):
    """Consolidation audits, newest first, and a form to start one when
    policy lets the user."""

    template_name = 'memagg_dashboard/audits.html'
    page_title = _('Consolidation audits')
    error_message = _('Unable to list the audits.')

    def read(self, memagg):
        return {'audits': self.page(memagg.audits.list,
                                    sort_key='created_at', sort_dir='desc'),
                'can_create': views.policy_check(self.request, CREATE_RULE),
                'memory_bases': MEMORY_BASES}


class AuditView(views.MemaggView):
    """An audit's plan in order, its instances by name, and Execute when
    it awaits execution and policy lets the user execute it."""

    template_name = 'memagg_dashboard/audit.html'
    page_title = _('Audit {{ audit.uuid }}')
    error_message = _('Unable to read the audit.')

    def read(self, memagg, uuid):
        audit = memagg.audits.get(uuid)
        # Not "actions": Horizon's page header shows a context variable
        # of that name as its buttons.
        plan = sorted(audit['actions'], key=lambda a: a['sequence'])
        names = api.instance_names(memagg, {
            a['source_host'] for a in plan if a['instance_uuid']})
        for action in plan:
            action['instance_name'] = names.get(action['instance_uuid'])
        return {'audit': audit, 'plan': plan,
                'can_execute': (audit['state'] == 'recommended' and
                                views.policy_check(self.request,
                                                   EXECUTE_RULE))}


class ExecuteView(generic.View):
    """POST: execute the audit's plan. Policy is checked here too, since a
    form can be posted without the button; memagg's API checks it again."""

    def post(self, request, uuid):
        if not views.policy_check(request, EXECUTE_RULE):
            return http.HttpResponseForbidden()
        try:
            audit = api.client(request).audits.execute(uuid)
            messages.success(request, _('Audit %(uuid)s is %(state)s.')
                             % audit)
        except Exception:
            exceptions.handle(request, _('Unable to execute the audit.'))
        return shortcuts.redirect('horizon:admin:memory:audit', uuid=uuid)


class CreateAuditView(generic.View):
    """POST: start a consolidation round that recommends a plan (never
    executed on its own), packing by the memory basis chosen; then show
    the audit. Policy is checked as for Execute."""

    def post(self, request):
        if not views.policy_check(request, CREATE_RULE):
            return http.HttpResponseForbidden()
        basis = request.POST.get('memory_basis', 'wss')
        if basis not in MEMORY_BASES:
            messages.error(request, _(
                'Unknown memory basis %(basis)r: choose wss or booked.')
                % {'basis': basis})
            return shortcuts.redirect('horizon:admin:memory:audits')
        try:
            audit = api.client(request).audits.create(memory_basis=basis,
                                                      auto_execute=False)
        except Exception:
            exceptions.handle(request, _('Unable to create an audit.'))
            return shortcuts.redirect('horizon:admin:memory:audits')
        messages.success(request, _('Audit %(uuid)s is %(state)s.') % audit)
        return shortcuts.redirect('horizon:admin:memory:audit',
                                  uuid=audit['uuid'])
