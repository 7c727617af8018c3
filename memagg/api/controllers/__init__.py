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

"""The API's controllers, one module per resource; importing this package
registers every route in memagg.api.controllers.base.ROUTES."""
from memagg.api.controllers import audits  # noqa: F401
from memagg.api.controllers import cloud_usage  # noqa: F401
from memagg.api.controllers import grants  # noqa: F401
from memagg.api.controllers import host_usages  # noqa: F401
from memagg.api.controllers import hosts  # noqa: F401
from memagg.api.controllers import instances  # noqa: F401
from memagg.api.controllers import migrations  # noqa: F401
from memagg.api.controllers import reservoir  # noqa: F401
from memagg.api.controllers import root  # noqa: F401
from memagg.api.controllers import services  # noqa: F401
