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

"""memagg's Horizon plug-in: Admin → Memory and Project → Memory.

Enabled by copying ``memagg/dashboard/enabled/_*.py`` into Horizon's
``openstack_dashboard/local/enabled/`` and
``memagg/dashboard/local_settings.d/_*.py`` into
``openstack_dashboard/local/local_settings.d/`` (doc/source/admin/
dashboard.rst). Every call to memagg goes through ``memaggclient``
(memagg.dashboard.api); charts are inline SVG drawn on the server
(memagg.dashboard.charts), so the pages load nothing from elsewhere.
May import memaggclient (and Horizon), nothing of the services.
"""
