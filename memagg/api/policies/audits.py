"""Policies of /v1/audits."""
from memagg.api.policies import base

LIST = 'memagg:audit:list'
GET = 'memagg:audit:get'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List consolidation audits.',
        '/v1/audits'),
    base.get_rule(
        GET, base.ADMIN,
        'Show an audit and its actions.',
        '/v1/audits/{uuid}'),
]


def list_rules():
    return rules
