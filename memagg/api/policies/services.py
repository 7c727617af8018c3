"""Policies of /v1/services."""
from memagg.api.policies import base

LIST = 'memagg:service:list'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List memagg services and whether each is up.',
        '/v1/services'),
]


def list_rules():
    return rules
