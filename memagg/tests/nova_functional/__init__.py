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

"""memagg against a real Nova and a real Placement, in one process.

The nova wheel ships its own functional harness (nova.tests.functional:
integrated_helpers, fixtures, the fake virt drivers); these tests build on
it as Nova's own functional tests do: real nova-api (through wsgi-intercept),
conductor, scheduler with memagg's filter and weigher loaded from
nova.conf, several fake-driver computes, and Placement from the
openstack-placement package. memagg's API answers on loopback from the same
process, on its own SQLite database.

Importing Nova's harness decides the process's concurrency mode (Nova
monkey-patches with eventlet unless told not to), so these tests run in an
interpreter of their own, in native-threading mode, started by
memagg/tests/functional/test_nova_functional.py:

    python -m pytest -p memagg.tests.nova_functional.threading_mode \
        memagg/tests/nova_functional

memagg/tests/conftest.py keeps the main run from collecting them.
"""
