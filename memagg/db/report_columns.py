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

"""The columnar form of a ComputeReport: the payload of the
``memagg.compute.report`` notification.

A ComputeReport carried as 41 nested versioned objects costs the scheduler
about 1 ms to rebuild; this form is plain JSON with a list per field::

    {"format": "1.0",
     "host": {"name": ..., "memory_mb": ..., ...},
     "reported_at": "2026-11-27T20:00:00.000000",
     "host_sample": {"cpu_util": ..., "mem_used_mb": ...},
     "instances": {"uuid": [...], "name": [...], ...},
     "samples": {"instance_uuid": [...], "sampled_at": [...], ...},
     "ledgers": {"grant_uuid": [...], "l1_puts": [...], ...}}

Format 1.1 added ``ledgers``: the grants' ledgers (grant_ledgers rows).

``format`` is MAJOR.MINOR: a minor version only adds columns, which a
reader of an older minor leaves out; a reader refuses another major.
"""
import datetime

from oslo_versionedobjects import fields as ovo_fields

from memagg.common import exceptions
from memagg.db import facade
from memagg.db.sqlalchemy import models
from memagg.objects import report as report_obj

FORMAT_VERSION = '1.1'
_MAJOR, _MINOR = (int(part) for part in FORMAT_VERSION.split('.'))


class UnknownFormat(exceptions.Invalid):
    """A report payload of a format major version this reader cannot
    read."""

    msg_fmt = ('report payload format %(format)s is not readable here (this '
               'memagg-scheduler reads %(major)d.x): upgrade memagg-scheduler '
               'before memagg-compute')


def _columns(objects, cls):
    """{field: [value per object]} of the fields any of ``objects`` sets; an
    object without one takes the field's default (else None)."""
    rows = [obj.as_dict() for obj in objects]
    names = [name for name in cls.fields if any(name in r for r in rows)]
    columns = {}
    for name in names:
        default = cls.fields[name].default
        if default is ovo_fields.UnspecifiedDefault:
            default = None
        columns[name] = [r.get(name, default) for r in rows]
    return columns


def _iso(moment):
    return moment.replace(tzinfo=None).isoformat()


def to_payload(report):
    """The columnar payload of ``report`` (a ComputeReport)."""
    host, _, _ = report.to_db_values()
    samples = _columns(report.samples, report_obj.WssSample)
    if 'sampled_at' in samples:
        samples['sampled_at'] = [_iso(at) for at in samples['sampled_at']]
    return {
        'format': FORMAT_VERSION,
        'host': host,
        'reported_at': _iso(report.reported_at),
        'host_sample': report.host_sample(),
        'instances': _columns(report.instances, report_obj.InstanceReport),
        'samples': samples,
        'ledgers': _columns(report.ledgers if report.obj_attr_is_set(
            'ledgers') else [], report_obj.GrantLedger),
    }


def _moment(text, field):
    try:
        moment = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise exceptions.InvalidParameter(
            field=field, reason='%r is not an ISO 8601 date and time; send '
            'e.g. 2026-11-27T20:00:00' % (text,))
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(
            tzinfo=None)
    return moment


def _known(values, model, field, newer):
    """``values`` without the keys ``model`` has no column for when the
    payload is of a ``newer`` minor version; else InvalidParameter for
    such a key."""
    if newer:
        known = {column.key for column in model.__table__.columns}
        values = {k: v for k, v in values.items() if k in known}
    facade.check_columns(model, values, field)
    return values


def _rows(columns, model, field, newer):
    """The rows of ``columns`` as dicts of ``model``'s columns; a column
    unknown to ``model`` is left out when the payload is of a ``newer``
    minor version, else refused."""
    if not isinstance(columns, dict) or not all(
            isinstance(values, list) for values in columns.values()):
        raise exceptions.InvalidParameter(
            field=field, reason='must be an object of lists (one per '
            'column), got %s' % type(columns).__name__)
    columns = _known(columns, model, field, newer)
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise exceptions.InvalidParameter(
            field=field, reason='columns of different lengths %s; every '
            'column needs a value per row' % sorted(lengths))
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def from_payload(payload):
    """The arguments of one report of memagg.db.reports.report_ingest_batch
    from a columnar ``payload``.

    Raises UnknownFormat for another major format version, InvalidParameter
    naming the field for anything else malformed.
    """
    if not isinstance(payload, dict):
        raise exceptions.InvalidParameter(
            field='payload', reason='must be an object, got %s'
            % type(payload).__name__)
    version = payload.get('format')
    try:
        major, minor = (int(part) for part in str(version).split('.'))
    except ValueError:
        raise exceptions.InvalidParameter(
            field='format', reason='must be MAJOR.MINOR such as %s, got %r'
            % (FORMAT_VERSION, version))
    if major != _MAJOR:
        raise UnknownFormat(format=version, major=_MAJOR)
    host = payload.get('host')
    if not isinstance(host, dict) or not host.get('name'):
        raise exceptions.InvalidParameter(
            field='host', reason='must be an object of hosts columns with '
            'a name')
    newer = minor > _MINOR
    host = _known(host, models.Host, 'host', newer)
    samples = _rows(payload.get('samples', {}), models.WssSample, 'samples',
                    newer)
    for sample in samples:
        sample['sampled_at'] = _moment(sample.get('sampled_at'),
                                       'samples.sampled_at')
    host_sample = payload.get('host_sample')
    if host_sample is not None and not isinstance(host_sample, dict):
        raise exceptions.InvalidParameter(
            field='host_sample', reason='must be an object or null')
    if host_sample is not None:
        host_sample = _known(host_sample, models.HostSample, 'host_sample',
                             newer)
    return dict(
        host=host,
        instances=_rows(payload.get('instances', {}), models.Instance,
                        'instances', newer),
        samples=samples,
        ledgers=_rows(payload.get('ledgers', {}), models.GrantLedger,
                      'ledgers', newer),
        reported_at=_moment(payload.get('reported_at'), 'reported_at'),
        host_sample=host_sample)
