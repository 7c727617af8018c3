"""memagg's database API: every read and write of the DB goes through here.

Functions take a RequestContext first (enginefacade keeps the session on it)
and return model objects detached from the session, or raise
memagg.common.exceptions.
"""
import datetime

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import utils as db_utils
from oslo_utils import timeutils
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.conf import CONF
from memagg.db.sqlalchemy import models

_context_manager = enginefacade.transaction_context()
_configured = False

# For every listable resource: its model, the column a marker names, the
# default sort, and the columns a request may filter and sort on.
LISTINGS = {
    'services': dict(model=models.Service, key='id',
                     sort=['host', 'binary'],
                     filters=('host', 'binary', 'disabled'),
                     sort_keys=('id', 'host', 'binary', 'last_seen_at',
                                'created_at')),
    'hosts': dict(model=models.Host, key='name', sort=['name'],
                  filters=('state',),
                  sort_keys=('name', 'memory_mb', 'free_reservoir_mb',
                             'lendable_mb', 'cpu_util', 'reported_at',
                             'created_at')),
    'instances': dict(model=models.Instance, key='uuid', sort=['created_at'],
                      filters=('host', 'project_id', 'status'),
                      sort_keys=('uuid', 'name', 'host', 'booked_mb',
                                 'current_mb', 'wss_mb', 'wss_maxavg_mb',
                                 'created_at', 'updated_at')),
    'wss_samples': dict(model=models.WssSample, key='id',
                        sort=['sampled_at'], filters=('instance_uuid',),
                        sort_keys=('sampled_at',)),
    'grants': dict(model=models.Grant, key='uuid', sort=['created_at'],
                   filters=('instance_uuid', 'consumer_host', 'status'),
                   sort_keys=('created_at', 'granted_mb', 'requested_mb')),
    'audits': dict(model=models.Audit, key='uuid', sort=['created_at'],
                   filters=('state',),
                   sort_keys=('created_at', 'finished_at')),
    'migrations': dict(model=models.Migration, key='uuid',
                       sort=['created_at'],
                       filters=('instance_uuid', 'source_host', 'dest_host',
                                'status'),
                       sort_keys=('created_at', 'updated_at',
                                  'duration_s')),
}


def configure():
    """Point the engine facade at [database]; call once per process."""
    global _configured
    if not _configured:
        _context_manager.configure(**dict(CONF.database.items()))
        _configured = True


def get_engine():
    """The writer engine (migrations, tests)."""
    configure()
    return _context_manager.writer.get_engine()


def dispose():
    """Drop the engine facade so the next call builds a new one (tests)."""
    global _context_manager, _configured
    _context_manager = enginefacade.transaction_context()
    _configured = False


def _reader():
    configure()
    return _context_manager.reader


def _writer():
    configure()
    return _context_manager.writer


def list_resources(context, resource, filters=None, limit=None, marker=None,
                   sort_keys=None, sort_dirs=None, since=None, until=None):
    """Return one page of a resource's rows.

    ``resource`` is a key of LISTINGS. ``filters`` maps column to value;
    ``marker`` is the key of the last row of the previous page; ``since`` and
    ``until`` bound created_at (sampled_at for WSS samples).
    """
    spec = LISTINGS[resource]
    model = spec['model']
    sort_keys = list(sort_keys or spec['sort'])
    sort_dirs = list(sort_dirs or ['asc'] * len(sort_keys))
    # A stable order needs a unique last key.
    if 'id' not in sort_keys:
        sort_keys.append('id')
        sort_dirs.append(sort_dirs[-1])
    with _reader().using(context) as session:
        query = session.query(model)
        for column, value in (filters or {}).items():
            if column not in spec['filters']:
                raise exceptions.InvalidParameter(
                    field=column, reason='not a filter of %s; use one of %s'
                    % (resource, ', '.join(spec['filters'])))
            query = query.filter(getattr(model, column) == value)
        time_column = (model.sampled_at if resource == 'wss_samples'
                       else model.created_at)
        if since is not None:
            query = query.filter(time_column >= since)
        if until is not None:
            query = query.filter(time_column <= until)
        marker_row = None
        if marker is not None:
            marker_row = session.query(model).filter(
                getattr(model, spec['key']) == marker).first()
            if marker_row is None:
                raise exceptions.MarkerNotFound(marker)
        query = db_utils.paginate_query(query, model, limit, sort_keys,
                                        marker=marker_row,
                                        sort_dirs=sort_dirs)
        return query.all()


def _get(context, model, column, value, resource):
    with _reader().using(context) as session:
        row = session.query(model).filter(
            getattr(model, column) == value).first()
        if row is None:
            raise exceptions.NotFound(resource=resource, id=value)
        return row


def host_get(context, name):
    return _get(context, models.Host, 'name', name, 'Host')


def instance_get(context, uuid):
    return _get(context, models.Instance, 'uuid', uuid, 'Instance')


def grant_get(context, uuid):
    return _get(context, models.Grant, 'uuid', uuid, 'Grant')


def audit_get(context, uuid):
    return _get(context, models.Audit, 'uuid', uuid, 'Audit')


def migration_get(context, uuid):
    return _get(context, models.Migration, 'uuid', uuid, 'Migration')


def service_heartbeat(context, host, binary, topic):
    """Create or refresh a service's row; return it."""
    now = timeutils.utcnow()
    with _writer().using(context) as session:
        row = session.query(models.Service).filter_by(
            host=host, binary=binary).first()
        if row is None:
            row = models.Service(host=host, binary=binary, topic=topic,
                                 report_count=0)
            session.add(row)
        row.topic = topic
        row.report_count += 1
        row.last_seen_at = now
        try:
            session.flush()
        except db_exc.DBDuplicateEntry:
            # Two heartbeats of a new service raced; the other one won.
            session.rollback()
            return service_heartbeat(context, host, binary, topic)
        return row


def service_is_up(service):
    """Whether a service row's last heartbeat is recent enough."""
    if service.last_seen_at is None:
        return False
    age = timeutils.utcnow() - service.last_seen_at
    return age.total_seconds() <= CONF.service_down_time


def report_ingest(context, host, instances, samples, reported_at=None):
    """Store one compute node's report in one transaction.

    ``host`` is a dict of Host columns (``name`` required); ``instances`` a
    list of dicts of Instance columns (``uuid`` required) now on that host;
    ``samples`` a list of dicts of WssSample columns. Instances the host
    reported before but not now are marked ``gone``.
    """
    reported_at = reported_at or timeutils.utcnow()
    with _writer().using(context) as session:
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
    return row


def reservoir_summary(context):
    """Memory the cluster could lend and has lent, in MiB, per host and total."""
    with _reader().using(context) as session:
        hosts = session.query(models.Host).order_by(models.Host.name).all()
        lent = dict(session.query(models.Slab.donor_host,
                                  sa.func.sum(models.Slab.size_mb))
                    .join(models.Grant)
                    .filter(models.Grant.status == 'active')
                    .group_by(models.Slab.donor_host).all())
        borrowed = dict(session.query(models.Grant.consumer_host,
                                      sa.func.sum(models.Grant.granted_mb))
                        .filter(models.Grant.status == 'active')
                        .group_by(models.Grant.consumer_host).all())
    per_host = [dict(host=h.name, free_reservoir_mb=h.free_reservoir_mb,
                     lendable_mb=h.lendable_mb,
                     lent_mb=int(lent.get(h.name) or 0),
                     borrowed_mb=int(borrowed.get(h.name) or 0))
                for h in hosts]
    totals = {key: sum(h[key] for h in per_host)
              for key in ('free_reservoir_mb', 'lendable_mb', 'lent_mb',
                          'borrowed_mb')}
    return dict(totals, hosts=per_host)


def purge_wss_samples(context, older_than_hours=None):
    """Delete WSS samples older than the retention; return how many."""
    hours = older_than_hours or CONF.wss.sample_retention_hours
    cutoff = timeutils.utcnow() - datetime.timedelta(hours=hours)
    with _writer().using(context) as session:
        result = session.execute(sa.delete(models.WssSample).where(
            models.WssSample.sampled_at < cutoff))
        return result.rowcount
