"""Turn DB rows into response bodies, field by field from the schemas."""
import datetime
import functools

from memagg.api import schemas
from memagg.db import api as db_api


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
                  state='up' if db_api.service_is_up(row) else 'down')


def grant_detail(row, version):
    return render('GrantDetail', row, version, slabs=[
        render('Slab', slab, version) for slab in row.slabs])


def audit_detail(row, version):
    return render('AuditDetail', row, version, actions=[
        render('AuditAction', action, version) for action in row.actions])


def reservoir(summary):
    """The reservoir body from db_api.reservoir_summary's dict."""
    return dict(summary, hosts=[dict(h) for h in summary['hosts']])
