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

"""Services (memagg-scheduler, memagg-compute, ...) and their heartbeats.
"""
from oslo_utils import timeutils

from memagg.conf import CONF
from memagg.db import facade
from memagg.db.sqlalchemy import models


#: How GET lists services: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Service, key='id',
               sort=['host', 'binary'],
               filters=('host', 'binary', 'disabled'),
               sort_keys=('id', 'host', 'binary', 'last_seen_at',
                          'created_at'))


@facade.retry_on_race
def service_heartbeat(context, host, binary, topic):
    """Create or refresh a service's row; return it."""
    now = timeutils.utcnow()
    with facade.writer().using(context) as session:
        # Locked so that concurrent heartbeats of one service all count.
        row = session.query(models.Service).filter_by(
            host=host, binary=binary).with_for_update().first()
        if row is None:
            row = models.Service(host=host, binary=binary, topic=topic,
                                 report_count=0)
            session.add(row)
        row.topic = topic
        row.report_count += 1
        row.last_seen_at = now
        return row


def service_is_up(service):
    """Whether a service row's last heartbeat is recent enough."""
    if service.last_seen_at is None:
        return False
    age = timeutils.utcnow() - service.last_seen_at
    return age.total_seconds() <= CONF.service_down_time
