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

from django.urls import re_path

from memagg.dashboard.admin_memory import views

urlpatterns = [
    re_path(r'^$', views.IndexView.as_view(), name='index'),
    re_path(r'^cloud/$', views.CloudView.as_view(), name='cloud'),
    re_path(r'^instances/$', views.InstancesView.as_view(),
            name='instances'),
    re_path(r'^instances/(?P<uuid>[^/]+)/$', views.InstanceView.as_view(),
            name='instance'),
    re_path(r'^reservoir/$', views.ReservoirView.as_view(),
            name='reservoir'),
    re_path(r'^audits/$', views.AuditsView.as_view(), name='audits'),
    re_path(r'^audits/create/$', views.CreateAuditView.as_view(),
            name='create_audit'),
    re_path(r'^audits/(?P<uuid>[^/]+)/$', views.AuditView.as_view(),
            name='audit'),
    re_path(r'^audits/(?P<uuid>[^/]+)/execute/$',
            views.ExecuteView.as_view(), name='execute'),
]
