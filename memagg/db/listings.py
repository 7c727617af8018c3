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

"""Paged, filtered and sorted listing of every listable resource, for the API's
GET of collections.
"""
import sqlalchemy as sa

from memagg.common import exceptions
from memagg.db import audits
from memagg.db import facade
from memagg.db import grants
from memagg.db import hosts
from memagg.db import instances
from memagg.db import migrations
from memagg.db import samples
from memagg.db import services


_SORT_DIRS = ('asc', 'desc')

# Every listable resource, by the name list_resources takes.
LISTINGS = {
    'services': services.LISTING,
    'hosts': hosts.LISTING,
    'instances': instances.LISTING,
    'wss_samples': samples.LISTING,
    'grants': grants.LISTING,
    'audits': audits.LISTING,
    'migrations': migrations.LISTING,
}


def _sort_params(resource, spec, sort_keys, sort_dirs):
    """Validated sort keys and directions, ending with the unique ``id``."""
    keys = list(sort_keys or spec['sort'])
    dirs = list(sort_dirs or [])
    for key in keys:
        if key not in spec['sort_keys'] and key != 'id':
            raise exceptions.InvalidParameter(
                field='sort_key', reason='%s cannot be sorted by %s; use one '
                'of %s' % (resource, key, ', '.join(spec['sort_keys'])))
    for direction in dirs:
        if direction not in _SORT_DIRS:
            raise exceptions.InvalidParameter(
                field='sort_dir', reason='%r is not a direction; use asc or '
                'desc' % direction)
    if len(dirs) > len(keys):
        raise exceptions.InvalidParameter(
            field='sort_dir', reason='%d directions for %d sort keys; give at '
            'most one direction per key' % (len(dirs), len(keys)))
    # Keys given no direction take the last one given (asc if none).
    dirs += [dirs[-1] if dirs else 'asc'] * (len(keys) - len(dirs))
    # A stable order, and so a marker that means one place, needs a unique
    # last key.
    if 'id' not in keys:
        keys.append('id')
        dirs.append(dirs[-1])
    return keys, dirs


def _paginate(query, model, keys, dirs, marker_row, limit):
    """Order ``query`` by ``keys`` and keep the rows after ``marker_row``.

    NULL sorts before every value in ascending order and after every value in
    descending order on every backend (PostgreSQL's own default is the
    opposite). oslo.db's paginate_query is not used because it skips a key
    whose marker value is NULL and so loses rows after such a marker.
    """
    columns = [getattr(model, key) for key in keys]
    for column, direction in zip(columns, dirs):
        order = column.asc() if direction == 'asc' else column.desc()
        if column.nullable:
            not_null = column.is_not(None)
            query = query.order_by(
                not_null.asc() if direction == 'asc' else not_null.desc())
        # Only the column itself: an index on it can then serve the order.
        query = query.order_by(order)
    if marker_row is not None:
        values = [getattr(marker_row, key) for key in keys]
        after = []
        for i, (column, direction) in enumerate(zip(columns, dirs)):
            value = values[i]
            if value is None:
                if direction == 'desc':
                    # Nothing sorts after NULL on a descending key.
                    continue
                beyond = column.is_not(None)
            elif direction == 'asc':
                beyond = column > value
            else:
                beyond = sa.or_(column < value, column.is_(None))
            same = [c.is_(None) if v is None else c == v
                    for c, v in zip(columns[:i], values[:i])]
            after.append(sa.and_(*same, beyond))
        query = query.filter(sa.or_(*after) if after else sa.false())
    if limit is not None:
        query = query.limit(limit)
    return query


def _marker_row(query, model, key, marker):
    """The row ``marker`` names among those ``query`` (the page's filters,
    project scope included) selects: a row outside them is no marker, as a
    missing one is not, so a marker tells nothing of another project."""
    column = getattr(model, key)
    if isinstance(column.type, sa.Integer):
        # A non-numeric marker for an integer key names no row; comparing it
        # would be a type error on PostgreSQL.
        try:
            marker = int(marker)
        except (TypeError, ValueError):
            raise exceptions.MarkerNotFound(marker)
    row = query.filter(column == marker).first()
    if row is None:
        raise exceptions.MarkerNotFound(marker)
    return row


def list_resources(context, resource, filters=None, limit=None, marker=None,
                   sort_keys=None, sort_dirs=None, since=None, until=None):
    """Return one page of a resource's rows.

    ``resource`` is a key of LISTINGS. ``filters`` maps column to value;
    ``marker`` is the key of the last row of the previous page; ``since`` and
    ``until`` bound created_at (sampled_at for WSS samples), both included.
    ``sort_keys`` are columns of the listing's ``sort_keys``; ``sort_dirs``
    are ``asc`` or ``desc``, one per key at most (missing ones repeat the
    last). Raises InvalidParameter naming the bad argument, MarkerNotFound.
    """
    if resource not in LISTINGS:
        raise exceptions.InvalidParameter(
            field='resource', reason='%s is not listable; use one of %s'
            % (resource, ', '.join(sorted(LISTINGS))))
    spec = LISTINGS[resource]
    model = spec['model']
    for column in filters or {}:
        if column not in spec['filters']:
            raise exceptions.InvalidParameter(
                field=column, reason='not a filter of %s; use one of %s'
                % (resource, ', '.join(spec['filters'])))
    if limit is not None and limit < 0:
        raise exceptions.InvalidParameter(
            field='limit', reason='%s is negative; give 0 or more' % limit)
    keys, dirs = _sort_params(resource, spec, sort_keys, sort_dirs)
    with facade.reader().using(context) as session:
        query = session.query(model)
        for column, value in (filters or {}).items():
            query = query.filter(getattr(model, column) == value)
        time_column = (model.sampled_at if resource == 'wss_samples'
                       else model.created_at)
        if since is not None:
            query = query.filter(time_column >= since)
        if until is not None:
            query = query.filter(time_column <= until)
        marker_row = None
        if marker is not None:
            marker_row = _marker_row(query, model, spec['key'], marker)
        return _paginate(query, model, keys, dirs, marker_row, limit).all()
