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

"""Admin → Memory: hosts, instances, the reservoir and its grants, and
consolidation audits."""
from django.contrib import messages
from django import http
from django import shortcuts
from django.utils.translation import gettext_lazy as _
from django.views import generic
from horizon import exceptions
from openstack_dashboard import policy as horizon_policy

from memagg.dashboard import api
from memagg.dashboard import charts
from memagg.dashboard import policy
from memagg.dashboard import views

EXECUTE_RULE = ((policy.SCOPE, 'memagg:audit:execute'),)


class IndexView(views.MemaggView):
    """Per-host bars and the cloud-wide summary, and every instance."""

    template_name = 'memagg_dashboard/admin_index.html'
    page_title = _('Memory')
    error_message = _('Unable to read the hosts\' memory.')

    def read(self, memagg):
        rows = api.host_rows(memagg.host_usages.list(),
                             memagg.reservoir.get())
        return {'summary': api.summary(rows),
                'bars': charts.host_bars(rows),
                'instances': self.page(memagg.instances.list)}


class InstanceView(views.InstanceView):
    """Any instance over time."""

    index_url = 'horizon:admin:memory:index'


class ReservoirView(views.MemaggView):
    """What each host has free, lends and borrows, and the grants with
    their donors and slabs."""

    template_name = 'memagg_dashboard/reservoir.html'
    page_title = _('Memory reservoir')
    error_message = _('Unable to read the reservoir.')

    def read(self, memagg):
        grants = self.page(memagg.grants.list)
        grants['rows'] = api.with_donors(memagg, grants['rows'])
        return {'reservoir': memagg.reservoir.get(), 'grants': grants}


class AuditsView(views.MemaggView):
    """Consolidation audits, newest first."""

    template_name = 'memagg_dashboard/audits.html'
    page_title = _('Consolidation audits')
    error_message = _('Unable to list the audits.')

    def read(self, memagg):
        return {'audits': self.page(memagg.audits.list,
                                    sort_key='created_at', sort_dir='desc')}


class AuditView(views.MemaggView):
    """An audit's plan in order, and Execute when it awaits execution and
    policy lets the user execute it."""

    template_name = 'memagg_dashboard/audit.html'
    page_title = _('Audit {{ audit.uuid }}')
    error_message = _('Unable to read the audit.')

    def read(self, memagg, uuid):
        audit = memagg.audits.get(uuid)
        return {'audit': audit,
                # Not "actions": Horizon's page header shows a context
                # variable of that name as its buttons.
                'plan': sorted(audit['actions'],
                               key=lambda a: a['sequence']),
                'can_execute': (audit['state'] == 'recommended' and
                                horizon_policy.check(EXECUTE_RULE,
                                                     self.request))}


class ExecuteView(generic.View):
    """POST: execute the audit's plan. Policy is checked here too, since a
    form can be posted without the button; memagg's API checks it again."""

    def post(self, request, uuid):
        if not horizon_policy.check(EXECUTE_RULE, request):
            return http.HttpResponseForbidden()
        try:
            audit = api.client(request).audits.execute(uuid)
            messages.success(request, _('Audit %(uuid)s is %(state)s.')
                             % audit)
        except Exception:
            exceptions.handle(request, _('Unable to execute the audit.'))
        return shortcuts.redirect('horizon:admin:memory:audit', uuid=uuid)
