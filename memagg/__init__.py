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

"""memagg: memory aggregation for OpenStack clouds.

memagg runs on native threads, never eventlet. oslo.messaging imports
oslo.service, whose default backend is eventlet, so memagg makes threading
the default here, before any memagg module can import oslo.messaging. A hook
rather than init_backend(): a host program that already chose a backend (the
sample config generator loads oslo.messaging first) keeps its choice.
"""
import warnings

from oslo_service import backend as _service_backend

# futurist imports eventlet merely because it is installed (oslo.service
# depends on it); nothing in memagg uses it, so its deprecation notice is
# noise on every command's stderr.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)
