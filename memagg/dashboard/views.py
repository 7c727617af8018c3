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

"""Views both panels share: reading memagg for a page, the time range a
chart shows, and an instance's memory over time."""
from django.contrib import messages
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import views
from openstack_dashboard import policy as horizon_policy

from memagg.dashboard import api
from memagg.dashboard import charts
from memagg.dashboard import policy


class MemaggView(views.HorizonTemplateView):
    """A page filled from memagg's API.

    Subclasses implement ``read(memagg, **kwargs)``, returning the
    template's context; a failed call shows Horizon's error message (or
    logs the user out on 401) and the page without that data.
    """

    error_message = _('Unable to read memagg.')

    def read(self, memagg, **kwargs):
        """The page's context, read through the memagg Client."""
        raise NotImplementedError

    def page(self, listing, **options):
        """One page of ``listing`` (a client manager's ``list``), from the
        ``marker`` of this request's query string: ``rows``, and the
        ``next_marker`` a "Next" link carries (None on the last page)."""
        page = listing(marker=self.request.GET.get('marker'), **options)
        return {'rows': page.items, 'next_marker': page.next_marker}

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            context.update(self.read(api.client(self.request), **kwargs))
        except Exception:
            exceptions.handle(self.request, self.error_message)
        return context


def chosen_range(request, default):
    """The time range the query string's ``range`` picks, among
    charts.RANGES: (its key, its length). A value that is not one of them
    shows an error saying which are, and gives ``default``'s."""
    key = request.GET.get('range', default)
    if key not in charts.RANGES:
        messages.error(request, _('Unknown time range %(range)r: choose '
                                  'one of %(ranges)s.') % {
            'range': key, 'ranges': ', '.join(charts.RANGES)})
        key = default
    return key, charts.RANGES[key]


class InstanceView(MemaggView):
    """An instance's memory over a chosen time range: booked, balloon
    target, WSS and WSS^maxavg, memory reclaimed by the host and (for
    whoever may list grants) remote memory; and which estimator gave the
    WSS."""

    template_name = 'memagg_dashboard/instance.html'
    # The URL name of the page listing the instances, for the way back.
    index_url = None
    page_title = _('Memory of {{ instance.name }}')
    error_message = _('Unable to read the instance\'s memory history.')
    default_range = '1h'

    def read(self, memagg, uuid):
        key, length = chosen_range(self.request, self.default_range)
        end = timezone.now().replace(microsecond=0)
        start = end - length
        instance, samples, cut = api.instance_history(memagg, uuid, start)
        grants = (api.instance_grants(memagg, uuid) if policy_check(
            self.request, 'memagg:grant:list') else None)
        return {'instance': instance, 'samples': samples, 'cut': cut,
                'estimators': sorted({s['estimator'] for s in samples}),
                'range': key, 'ranges': charts.RANGES,
                'chart': charts.history(instance, samples, start, end,
                                        grants)}


def policy_check(request, rule):
    """Whether memagg's policy ``rule`` lets the user of ``request`` act
    (Horizon's copy of the rules; the API checks again)."""
    return horizon_policy.check(((policy.SCOPE, rule),), request)
