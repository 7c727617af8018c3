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

"""/v1/services: memagg's processes and their heartbeats."""
from memagg.api.controllers import base
from memagg.api.policies import services as policy
from memagg.api import schemas
from memagg.api import views


@base.route('/v1/services', 'List memagg services; state is up or down '
            'from the last heartbeat.', schemas.list_response('services'),
            query=base.list_query('services'))
def list_services(query):
    base.enforce(policy.LIST)
    return base.paginate('services', query,
                         lambda row: views.service(row, base.version()))
