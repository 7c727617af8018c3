"""Policies of /v1/migrations."""
from memagg.api.policies import base

LIST = 'memagg:migration:list'
GET = 'memagg:migration:get'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List migrations memagg asked for.',
        '/v1/migrations'),
    base.get_rule(
        GET, base.ADMIN,
        'Show a migration.',
        '/v1/migrations/{uuid}'),
]


def list_rules():
    return rules
