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

"""``openstack memagg host usage list`` through memagg's real client
against the real API served on loopback: one request, a row per host."""
import types

from memagg.api import microversion
from memaggclient import http
from memaggclient.osc.v1 import host_usages


def test_one_row_per_host_from_one_request(make_client, server):
    app = types.SimpleNamespace(client_manager=types.SimpleNamespace(
        memagg=make_client()))
    command = host_usages.ListHostUsage(app, None)
    parsed = command.get_parser('host usage list').parse_args([])

    columns, rows = command.take_action(parsed)

    rows = [dict(zip(columns, row)) for row in rows]
    assert [(r['host'], r['memory_mb'], r['wss_maxavg_mb'], r['booked_mb'],
             r['instances'], r['remote_mb']) for r in rows] == [
        ('host-1', 65536, 1100, 4096, 1, 512),
        ('host-2', 32768, 1100, 4096, 1, 0)]
    assert all(r['reported_at'].endswith('Z') for r in rows)
    _, recorder = server
    assert [r for r in recorder.requests if r[1] != '/'] == [
        ('GET', '/v1/host_usages',
         'memory-aggregation ' + microversion.to_string(http.MAX_VERSION))]
