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

"""/v1/reservoir: the memory the cluster can lend and has lent."""
from memagg.api.controllers import base
from memagg.api.policies import reservoir as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import grants as db_grants


@base.route('/v1/reservoir', 'Show the memory reservoir in MiB: free, '
            'lendable, lent and borrowed, and (from 1.13) kept in the '
            'local tier, per host and in total.',
            schemas.item_response('reservoir', 'Reservoir'))
def get_reservoir(query):
    base.enforce(policy.GET)
    return {'reservoir': views.reservoir(
        db_grants.reservoir_summary(base.context()), base.version())}
