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

"""openstack memagg host usage list."""
from osc_lib.command import command

from memaggclient.osc.v1 import base


class ListHostUsage(base.PluginCommand, command.Lister):
    """List every host's memory and what its instances use, as Nova's
    scheduler filter reads it (one request, no pages; microversion
    1.5)."""

    columns = ('host', 'state', 'memory_mb', 'reserved_mb', 'wss_maxavg_mb',
               'booked_mb', 'instances', 'remote_mb', 'reported_at')

    def take_action(self, parsed_args):
        usages = base.client(self).host_usages.list()['host_usages']
        return self.columns, ([usage[c] for c in self.columns]
                              for usage in usages)
