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

"""The Client of memagg's API: one attribute per resource."""
from memaggclient import audits
from memaggclient import cloud_usage
from memaggclient import grants
from memaggclient import host_usages
from memaggclient import hosts
from memaggclient import http
from memaggclient import instances
from memaggclient import migrations
from memaggclient import reservoir
from memaggclient import services


class Client:
    """A client of the memory-aggregation API over a keystoneauth session.

    ``session`` is a keystoneauth1 Session (its auth plugin finds the
    endpoint in the catalog by ``interface`` and ``region_name``, or
    ``endpoint_override`` gives it). ``api_version`` is the microversion
    ('1.2'), or None / 'latest' for the newest that both this client and
    the server support; ``api_version`` tells which is in use. Other
    keyword arguments go to the keystoneauth Adapter.

    Each resource is an attribute: ``hosts``, ``instances``,
    ``reservoir``, ``grants``, ``audits``, ``migrations``, ``services``,
    ``host_usages``, ``cloud_usage``.
    Errors are memaggclient.exceptions.ClientException subclasses.
    """

    def __init__(self, session, api_version=None, interface=None,
                 region_name=None, endpoint_override=None,
                 **adapter_options):
        self.http = http.HTTPClient(
            session, api_version=api_version, interface=interface,
            region_name=region_name, endpoint_override=endpoint_override,
            **adapter_options)
        self.hosts = hosts.HostManager(self.http)
        self.instances = instances.InstanceManager(self.http)
        self.reservoir = reservoir.ReservoirManager(self.http)
        self.grants = grants.GrantManager(self.http)
        self.audits = audits.AuditManager(self.http)
        self.migrations = migrations.MigrationManager(self.http)
        self.services = services.ServiceManager(self.http)
        self.host_usages = host_usages.HostUsageManager(self.http)
        self.cloud_usage = cloud_usage.CloudUsageManager(self.http)

    @property
    def api_version(self):
        """The microversion in use, 'X.Y' (agreed with the server on first
        use)."""
        return http.version_string(self.http.api_version)
