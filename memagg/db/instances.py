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

"""Instances (VMs) as their hosts last reported them.
"""
import sqlalchemy as sa

from memagg.db import facade
from memagg.db.sqlalchemy import models


#: How GET lists instances: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Instance, key='uuid', sort=['created_at'],
               filters=('host', 'project_id', 'status'),
               sort_keys=('uuid', 'name', 'host', 'booked_mb',
                          'current_mb', 'wss_mb', 'wss_maxavg_mb',
                          'created_at', 'updated_at'))


def instance_get(context, uuid):
    return facade.get_one(context, models.Instance, 'uuid', uuid, 'Instance')


def instances_on_hosts(context, hosts):
    """The instances ``hosts`` (names) last reported and still run (not
    ``gone``), ordered by host and uuid."""
    with facade.reader().using(context) as session:
        return session.query(models.Instance).filter(
            models.Instance.host.in_(list(hosts)),
            models.Instance.status != 'gone').order_by(
            models.Instance.host, models.Instance.uuid).all()


def instance_sizes(context):
    """{uuid: (booked_mb, vcpus)} of every instance memagg knows, gone ones
    included (their history outlives them)."""
    model = models.Instance
    with facade.reader().using(context) as session:
        return {row.uuid: (row.booked_mb, row.vcpus) for row in
                session.execute(sa.select(model.uuid, model.booked_mb,
                                          model.vcpus))}
