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

"""Compute hosts: what they last reported, their state, and the memory their
instances and grants use.
"""
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import facade
from memagg.db import grants
from memagg.db.sqlalchemy import models


#: How GET lists hosts: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.Host, key='name', sort=['name'],
               filters=('state',),
               sort_keys=('name', 'memory_mb', 'free_reservoir_mb',
                          'lendable_mb', 'cpu_util', 'reported_at',
                          'created_at'))


def host_get(context, name):
    return facade.get_one(context, models.Host, 'name', name, 'Host')


@facade.retry_on_race
def host_set_state(context, name, state):
    """Set host ``name``'s state (active, or standby when a plan has
    disabled its compute service); NotFound when memagg has no such
    host."""
    with facade.writer().using(context) as session:
        row = session.query(models.Host).filter_by(
            name=name).with_for_update().first()
        if row is None:
            raise exceptions.NotFound(resource='Host', id=name)
        row.state = state
        return row


def hosts_for_round(context, reported_since):
    """The hosts a consolidation round considers: those that reported at or
    after ``reported_since``, and standby hosts (powered off by a plan, so
    silent) whatever their last report. Ordered by name."""
    with facade.reader().using(context) as session:
        return session.query(models.Host).filter(sa.or_(
            models.Host.reported_at >= reported_since,
            models.Host.state == 'standby')).order_by(models.Host.name).all()


def host_usages(context):
    """Every host's memory and what uses it, read in one transaction with
    one query per table (GET /v1/host_usages, for Nova's scheduler).

    Returns ``(hosts, instances, granted, held, lent)``: the hosts by
    name; the instances still running (not ``gone``) as rows of ``host``,
    ``booked_mb``, ``wss_maxavg_mb``, ``wss_mb``, ``current_mb`` and
    ``reclaimed_mb``; MiB granted by active grants per consumer host; MiB
    of the slabs each donor holds (pending, active or releasing), per
    donor host; MiB of active grants' slabs each donor holds
    (grants.lent_mb_by_donor).
    """
    inst = models.Instance
    with facade.reader().using(context) as session:
        hosts = session.query(models.Host).order_by(models.Host.name).all()
        instances = session.query(
            inst.host, inst.booked_mb, inst.wss_maxavg_mb, inst.wss_mb,
            inst.current_mb, inst.reclaimed_mb).filter(
            inst.status != 'gone').all()
        # Joins this transaction: enginefacade nests on one context.
        granted = grants.remote_mb_by_consumer(context)
        held = {host: int(total or 0) for host, total in session.query(
            models.Slab.donor_host, sa.func.sum(models.Slab.size_mb))
            .filter(models.Slab.status.in_(grants.SLAB_HOLDING))
            .group_by(models.Slab.donor_host)}
        lent = grants.lent_mb_by_donor(context)
    return hosts, instances, granted, held, lent
