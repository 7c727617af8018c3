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

"""The request context passed from the API and over RPC."""
from oslo_context import context


class RequestContext(context.RequestContext):
    """oslo.context's context; memagg adds nothing yet but its constructors."""


def get_admin_context():
    """A context for memagg's own periodic work, with admin rights."""
    return RequestContext(is_admin=True, roles=['admin'],
                          overwrite=False)
