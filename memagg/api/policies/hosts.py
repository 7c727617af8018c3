"""Policies of /v1/hosts."""
from memagg.api.policies import base

LIST = 'memagg:host:list'
GET = 'memagg:host:get'
RECLAIM = 'memagg:host:reclaim'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List compute hosts.',
        '/v1/hosts'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a compute host.',
        '/v1/hosts/{name}'),
    base.rule(
        RECLAIM, base.ADMIN,
        'Take back memory a host lends to other hosts\' instances.',
        'POST', '/v1/hosts/{name}/reclaim'),
]


def list_rules():
    return rules
