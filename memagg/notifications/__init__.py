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

"""Versioned notifications of memagg's state changes.

memagg sends one notification each time an audit, an audit action, a grant
or a migration changes state, once the change is committed. The payload is
a versioned object sent in its own envelope (``memagg_object.name``,
``.version``, ``.namespace``, ``.data``), so a consumer can check the
version it gets. See doc/source/admin/notifications.rst. The database
layer (memagg.db) sends them; this package may import conf, common and
objects.
"""
