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

"""Turn DB rows into response bodies, field by field from the schemas."""
import datetime
import functools

import sqlalchemy as sa

from memagg.api import schemas
from memagg.db import services as db_services


def _value(value):
    if isinstance(value, datetime.datetime):
        # The DB holds naive UTC; say so on the wire.
        return value.replace(microsecond=0).isoformat() + 'Z'
    return value


def render(component, row, version, **computed):
    """The body of one ``row`` as ``component`` at microversion ``version``.

    Fields come from the component's schema, so a column the schema does not
    name (a grant's secret) can never leak; ``computed`` fills fields that
    are not columns.
    """
    return {field: _value(computed[field] if field in computed
                          else getattr(row, field))
            for field in _fields(component, version)}


@functools.lru_cache(maxsize=None)
def _fields(component, version):
    """The fields ``component`` has at ``version`` (cached: every row of a
    page asks)."""
    since = schemas.FIELDS_SINCE.get(component, {})
    return tuple(field for field in schemas.COMPONENTS[component]['properties']
                 if since.get(field, version) <= version)


def service(row, version):
    return render('Service', row, version,
                  state='up' if db_services.service_is_up(row) else 'down')


#: A slab's tier by its status: where its pages are (None: given up).
SLAB_TIERS = {'active': 'l1', 'reclaiming': 'l1', 'reclaimed': 'l2',
              'promoting': 'l2'}


def _tier_mb(row, tier):
    return sum(s.size_mb for s in row.slabs
               if SLAB_TIERS.get(s.status) == tier)


def grant(row, version):
    """A grant as GET /v1/grants lists it."""
    return render('Grant', row, version, l1_mb=_tier_mb(row, 'l1'),
                  l2_mb=_tier_mb(row, 'l2'))


def _statistics(row):
    """A grant's statistics from its grant_ledgers row (None: no report
    yet)."""
    # A grant made by this request (POST) was not read with its ledger: it
    # has none yet.
    if 'ledger' in sa.inspect(row).unloaded or row.ledger is None:
        return None
    ledger = row.ledger
    tiers = {tier: {count: getattr(ledger, '%s_%s' % (tier, count))
                    for count in schemas.COMPONENTS['TierLedger'][
                        'properties']}
             for tier in ('l1', 'l2')}
    return dict(tiers, host=ledger.host,
                reported_at=_value(ledger.reported_at))


def grant_detail(row, version):
    return render('GrantDetail', row, version, slabs=[
        render('Slab', slab, version, tier=SLAB_TIERS.get(slab.status))
        for slab in row.slabs], l1_mb=_tier_mb(row, 'l1'),
        l2_mb=_tier_mb(row, 'l2'), statistics=_statistics(row))


def audit_detail(row, version):
    return render('AuditDetail', row, version, actions=[
        render('AuditAction', action, version) for action in row.actions])


def reservoir(summary, version):
    """The reservoir body at ``version`` from
    memagg.db.grants.reservoir_summary's dict."""
    body = {field: summary[field] for field in _fields('Reservoir', version)
            if field != 'hosts'}
    host_fields = _fields('ReservoirHost', version)
    body['hosts'] = [{field: h[field] for field in host_fields}
                     for h in summary['hosts']]
    return body
