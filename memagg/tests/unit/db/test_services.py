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

"""memagg.db.services on SQLite: heartbeats and whether a service is
up."""
import datetime

from oslo_utils import timeutils

from memagg.db import services as db_services


def test_heartbeat_creates_then_refreshes(db):
    first = db_services.service_heartbeat(db, 'node', 'memagg-compute', 't1')
    second = db_services.service_heartbeat(db, 'node', 'memagg-compute', 't2')

    assert first.report_count == 1
    assert second.id == first.id
    assert (second.report_count, second.topic) == (2, 't2')
    assert second.last_seen_at >= first.last_seen_at
    assert db_services.service_is_up(second)


def test_service_is_up_follows_service_down_time(db, conf):
    service = db_services.service_heartbeat(db, 'node', 'memagg-compute', 't')
    conf.config(service_down_time=60)

    service.last_seen_at = timeutils.utcnow() - datetime.timedelta(seconds=50)
    assert db_services.service_is_up(service)
    service.last_seen_at = timeutils.utcnow() - datetime.timedelta(seconds=70)
    assert not db_services.service_is_up(service)
    service.last_seen_at = None
    assert not db_services.service_is_up(service)
