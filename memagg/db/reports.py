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

"""Ingestion of memagg-compute reports: a host, its instances and their samples
in one transaction.
"""
from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.db import facade
from memagg.db.sqlalchemy import models


@facade.retry_on_race
def report_ingest(context, host, instances, samples, reported_at=None,
                  host_sample=None):
    """Store one compute node's report in one transaction.

    ``host`` is a dict of Host columns (``name`` required); ``instances`` a
    list of dicts of Instance columns (``uuid`` required) now on that host;
    ``samples`` a list of dicts of WssSample columns; ``host_sample`` a dict
    of HostSample columns (``cpu_util``, ``mem_used_mb``; ``sampled_at``
    defaults to ``reported_at``), or None. Instances the host reported
    before but not now are marked ``gone``.
    """
    facade.check_columns(models.Host, host, 'host')
    for values in instances:
        facade.check_columns(models.Instance, values, 'instances')
    for sample in samples:
        facade.check_columns(models.WssSample, sample, 'samples')
    if host_sample is not None:
        facade.check_columns(models.HostSample, host_sample, 'host_sample')
    reported_at = reported_at or timeutils.utcnow()
    with facade.writer().using(context) as session:
        row = session.query(models.Host).filter_by(name=host['name']).first()
        if row is None:
            row = models.Host(name=host['name'])
            session.add(row)
        for key, value in host.items():
            setattr(row, key, value)
        row.reported_at = reported_at

        existing = {i.uuid: i for i in session.query(models.Instance).filter(
            sa.or_(models.Instance.host == host['name'],
                   models.Instance.uuid.in_([i['uuid'] for i in instances])))}
        seen = set()
        for values in instances:
            inst = existing.get(values['uuid'])
            if inst is None:
                inst = models.Instance(uuid=values['uuid'])
                session.add(inst)
            for key, value in values.items():
                setattr(inst, key, value)
            inst.host = host['name']
            inst.status = values.get('status', 'active')
            seen.add(values['uuid'])
        for uuid, inst in existing.items():
            if uuid not in seen and inst.host == host['name']:
                inst.status = 'gone'
        if samples:
            session.execute(sa.insert(models.WssSample), [
                dict(sample, host=host['name']) for sample in samples])
        if host_sample is not None:
            session.add(models.HostSample(**dict(
                {'sampled_at': reported_at}, **host_sample,
                host=host['name'])))
    return row
