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

"""A pytest plug-in (-p memagg.tests.nova_functional.threading_mode)
that imports Nova's test package before any conftest does, in native
threading mode.

nova.tests and nova.tests.functional decide at import whether to
monkey-patch with eventlet; with OS_NOVA_DISABLE_EVENTLET_PATCHING they do
not, but refuse to start if eventlet was imported first (memagg's
configuration imports oslo.messaging, which does). A plug-in named with
-p is imported before conftest files, so it comes first. It also tells
memagg/tests/conftest.py to collect memagg/tests/nova_functional.
"""
import os

os.environ['OS_NOVA_DISABLE_EVENTLET_PATCHING'] = '1'
os.environ['MEMAGG_NOVA_FUNCTIONAL'] = '1'

# Its import is the point.
import nova.tests.functional  # noqa: E402,F401
