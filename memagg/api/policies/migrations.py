"""Policies of /v1/migrations."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:migration:list'
GET = 'memagg:migration:get'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description='List migrations memagg asked for.',
        operations=[{'method': 'GET', 'path': '/v1/migrations'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN,
        description='Show a migration.',
        operations=[{'method': 'GET', 'path': '/v1/migrations/{uuid}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
