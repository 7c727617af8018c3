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

"""Views both panels share: reading memagg for a page, and an instance's
memory over time."""
from django.utils.translation import gettext_lazy as _
from horizon import exceptions
from horizon import views

from memagg.dashboard import api
from memagg.dashboard import charts


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


class InstanceView(MemaggView):
    """An instance's booked memory, balloon target and estimated WSS over
    time, and which estimator gave the WSS."""

    template_name = 'memagg_dashboard/instance.html'
    # The URL name of the page listing the instances, for the way back.
    index_url = None
    page_title = _('Memory of {{ instance.name }}')
    error_message = _('Unable to read the instance\'s memory history.')

    def read(self, memagg, uuid):
        instance, samples = api.instance_history(memagg, uuid)
        return {'instance': instance, 'samples': samples,
                'estimators': sorted({s['estimator'] for s in samples}),
                'chart': charts.history(instance, samples)}
