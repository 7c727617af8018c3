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

"""memagg's Python client: the one way the CLI, the Horizon panel and the
Nova scheduler filter call memagg's API.

A distribution of its own (python-memaggclient), pure Python: it may import
keystoneauth1 (and, in osc, osc-lib and cliff), never memagg, so that it
installs where the server cannot be built.

    from keystoneauth1 import session
    from memaggclient import client

    memagg = client.Client(session.Session(auth=auth))
    page = memagg.instances.list(host='compute-1', limit=100)
    for instance in page.all_items():
        ...
"""
