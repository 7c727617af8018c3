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

"""Project → Memory: the project's instances only (memagg's API lists a
non-admin's own project's instances)."""
from django.utils.translation import gettext_lazy as _

from memagg.dashboard import views


class IndexView(views.MemaggView):
    """The project's instances with their WSS."""

    template_name = 'memagg_dashboard/project_index.html'
    page_title = _('Memory')
    error_message = _('Unable to list your instances\' memory.')

    def read(self, memagg):
        return {'instances': self.page(memagg.instances.list)}


class InstanceView(views.InstanceView):
    """One of the project's instances over time."""

    index_url = 'horizon:project:memory:index'
