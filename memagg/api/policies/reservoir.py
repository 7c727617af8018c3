"""Policies of /v1/reservoir."""
from memagg.api.policies import base

GET = 'memagg:reservoir:get'

rules = [
    base.get_rule(
        GET, base.ADMIN,
        'Show the memory reservoir: lendable, lent and '
        'borrowed memory.',
        '/v1/reservoir'),
]


def list_rules():
    return rules
