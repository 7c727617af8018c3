"""Policies of /v1/grants."""
from memagg.api.policies import base

LIST = 'memagg:grant:list'
GET = 'memagg:grant:get'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List remote-memory grants.',
        '/v1/grants'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a grant and its slabs.',
        '/v1/grants/{uuid}'),
]


def list_rules():
    return rules
