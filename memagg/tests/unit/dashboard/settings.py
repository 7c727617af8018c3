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

"""Django settings of the panels' view tests: Horizon's own test settings
with memagg's panels enabled and its policies loaded, as a deployment has
them, and policy checked for real (Horizon's tests turn it off)."""
import pathlib

from openstack_dashboard import enabled

from memagg import dashboard
from memagg.dashboard import enabled as memagg_enabled

# Horizon's test settings load the panels of openstack_dashboard.enabled;
# memagg's files join them there, as openstack_dashboard/local/enabled
# joins them in a deployment.
enabled.__path__.append(memagg_enabled.__path__[0])

from openstack_dashboard.test.settings import *  # noqa: E402,F401,F403

# The snippet an operator copies into local_settings.d, run the same way.
exec((pathlib.Path(dashboard.__file__).parent / 'local_settings.d' /  # noqa
      '_90_memagg.py').read_text())

POLICY_CHECK_FUNCTION = 'openstack_auth.policy.check'
# The rest of the suite keeps its own logging.
LOGGING_CONFIG = None
