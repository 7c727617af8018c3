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

"""/v1/cloud_usage: the cloud's memory now and over time."""
from memaggclient import base

_SINCE = (1, 12)


class CloudUsageManager(base.Manager):
    """``client.cloud_usage``."""

    def get(self, since=None, until=None, points=None):
        """The cloud's memory as a dict: ``now`` (hosts, booked_mb,
        wss_maxavg_mb, freed_mb, hosts_needed, emptiable_hosts, ...) and
        ``history``, one such point per bucket of [``since``, ``until``]
        (ISO 8601 strings or datetimes; default the last day) cut into
        ``points`` buckets (default 60) of ``step_s`` seconds.
        Microversion 1.12.
        """
        self._http.require(_SINCE, 'showing the cloud\'s usage')
        params = {k: v.isoformat() if hasattr(v, 'isoformat') else v
                  for k, v in (('since', since), ('until', until),
                               ('points', points)) if v is not None}
        return self._http.request('GET', '/v1/cloud_usage',
                                  params=params)['cloud_usage']
