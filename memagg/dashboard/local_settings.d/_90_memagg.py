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

# Horizon execs this file at the end of its settings (copy it into
# openstack_dashboard/local/local_settings.d/): it tells Horizon's policy
# checks where memagg's rules are, so the panels show what the user's
# roles allow. Runs in the settings' namespace, hence no imports of ours
# beyond memagg.dashboard.policy.
from memagg.dashboard import policy as _memagg_policy  # noqa: E402

POLICY_FILES[_memagg_policy.SCOPE] = _memagg_policy.OVERRIDES  # noqa: F821
DEFAULT_POLICY_FILES[_memagg_policy.SCOPE] = str(  # noqa: F821
    _memagg_policy.DEFAULTS)
