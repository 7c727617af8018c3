"""Policies of /v1/grants."""
from memagg.api.policies import base

LIST = 'memagg:grant:list'
GET = 'memagg:grant:get'
CREATE = 'memagg:grant:create'
DELETE = 'memagg:grant:delete'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List remote-memory grants.',
        '/v1/grants'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a grant and its slabs.',
        '/v1/grants/{uuid}'),
    base.rule(
        CREATE, base.ADMIN,
        'Lend remote memory to an instance: donors set up slabs and its '
        'host attaches them as a swap disk.',
        'POST', '/v1/grants'),
    base.rule(
        DELETE, base.ADMIN,
        'Release a grant: its instance\'s pages go back to its host, the '
        'donors free the memory.',
        'DELETE', '/v1/grants/{uuid}'),
]


def list_rules():
    return rules
