"""Policies of /v1/hosts."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:host:list'
GET = 'memagg:host:get'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description='List compute hosts.',
        operations=[{'method': 'GET', 'path': '/v1/hosts'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN,
        description='Show a compute host.',
        operations=[{'method': 'GET', 'path': '/v1/hosts/{name}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
