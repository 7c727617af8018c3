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

"""Where a grant's local copy lives (memagg/compute/remote_grants.py)."""
from memagg.compute import remote_grants
from memagg.tests.unit.compute import remote_fixtures as helpers

VM = helpers.VM
GRANT = helpers.GRANT


def test_local_copy_path_names_the_instance():
    path = remote_grants.local_copy_path('/var/lib/memagg/swapd', VM, GRANT)
    assert path == '/var/lib/memagg/swapd/local/%s/%s.img' % (VM, GRANT)
    assert remote_grants.instance_of_local_copy(path) == VM
    assert remote_grants.instance_of_local_copy('/elsewhere/x.img') is None
    assert remote_grants.instance_of_local_copy(None) is None
