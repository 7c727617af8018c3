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

"""memagg.common.rpc's serializer: a request context crosses RPC whole."""
from memagg.common import context
from memagg.common import rpc
from memagg.objects import base


def test_context_survives_the_rpc_serializer():
    serializer = rpc.RequestContextSerializer(
        base.MemaggObjectSerializer())
    ctxt = context.RequestContext(project_id='p1', roles=['reader'],
                                  request_id='req-0123')
    again = serializer.deserialize_context(serializer.serialize_context(ctxt))
    assert isinstance(again, context.RequestContext)
    assert (again.project_id, again.roles, again.request_id) == (
        'p1', ['reader'], 'req-0123')
