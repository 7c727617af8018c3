"""Policies of /v1/hosts."""
from memagg.api.policies import base

LIST = 'memagg:host:list'
GET = 'memagg:host:get'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List compute hosts.',
        '/v1/hosts'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a compute host.',
        '/v1/hosts/{name}'),
]


def list_rules():
    return rules
