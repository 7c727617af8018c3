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

"""WSS samples of instances and CPU/memory samples of hosts: the latest ones
of each, the history of a time window, and their purge after the
retention.
"""
import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db import facade
from memagg.db.sqlalchemy import models


#: How GET lists wss samples: its model, the column a marker names, the
#: default sort, and the columns a request may filter and sort on.
LISTING = dict(model=models.WssSample, key='id',
               sort=['sampled_at'], filters=('instance_uuid',),
               sort_keys=('sampled_at',))


def _latest(session, columns, key, order, where, count):
    """Rows of ``columns`` with the ``count`` greatest ``order`` values per
    ``key`` value, oldest first within each key."""
    rank = sa.func.row_number().over(
        partition_by=key, order_by=(order.desc(), columns[0].desc()))
    ranked = sa.select(*columns, key.label('key'), order.label('at'),
                       rank.label('rank')).where(*where).subquery()
    return session.execute(
        sa.select(ranked).where(ranked.c.rank <= count).order_by(
            ranked.c.key, ranked.c.at, ranked.c.id)).all()


def host_samples_latest(context, hosts, count):
    """The last ``count`` host samples of each of ``hosts`` (names): a dict
    host -> list of (cpu_util, mem_used_mb), oldest first."""
    hosts = list(hosts)
    result = {host: [] for host in hosts}
    if not hosts or count < 1:
        return result
    model = models.HostSample
    with facade.reader().using(context) as session:
        for row in _latest(session, [model.id, model.cpu_util,
                                     model.mem_used_mb],
                           model.host, model.sampled_at,
                           [model.host.in_(hosts)], count):
            result[row.key].append((row.cpu_util, row.mem_used_mb))
    return result


def instance_cpu_latest(context, uuids, count):
    """The last ``count`` CPU samples (cores) of each of ``uuids``: a dict
    uuid -> list of floats, oldest first; samples without CPU are
    skipped."""
    uuids = list(uuids)
    result = {uuid: [] for uuid in uuids}
    if not uuids or count < 1:
        return result
    model = models.WssSample
    with facade.reader().using(context) as session:
        for row in _latest(session, [model.id, model.cpu_util],
                           model.instance_uuid, model.sampled_at,
                           [model.instance_uuid.in_(uuids),
                            model.cpu_util.is_not(None)], count):
            result[row.key].append(row.cpu_util)
    return result


def wss_history(context, since, until, batch=2000):
    """The WSS samples taken at or after ``since`` and before ``until``,
    one instance after the other, oldest first: rows of instance_uuid,
    host, sampled_at, wss_mb, cpu_util (cores, None when not reported)
    and warming. A generator read ``batch`` rows at a time, so a week of
    a cloud's history is not held in memory."""
    model = models.WssSample
    query = sa.select(
        model.instance_uuid, model.host, model.sampled_at, model.wss_mb,
        model.cpu_util, model.warming).where(
        model.sampled_at >= since, model.sampled_at < until).order_by(
        model.instance_uuid, model.sampled_at, model.id)
    with facade.reader().using(context) as session:
        yield from session.execute(
            query.execution_options(yield_per=batch))


def purge_wss_samples(context, older_than_hours=None):
    """Delete WSS samples and host samples older than ``older_than_hours``
    (default: [wss] sample_retention_hours); return how many."""
    hours = (CONF.wss.sample_retention_hours if older_than_hours is None
             else older_than_hours)
    if hours < 0:
        raise exceptions.InvalidParameter(
            field='older_than_hours', reason='%s is negative; give 0 or more'
            % hours)
    cutoff = timeutils.utcnow() - datetime.timedelta(hours=hours)
    with facade.writer().using(context) as session:
        count = 0
        for model in (models.WssSample, models.HostSample):
            count += session.execute(sa.delete(model).where(
                model.sampled_at < cutoff)).rowcount
        return count
