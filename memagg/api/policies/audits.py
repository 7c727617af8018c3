"""Policies of /v1/audits."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:audit:list'
GET = 'memagg:audit:get'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description='List consolidation audits.',
        operations=[{'method': 'GET', 'path': '/v1/audits'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN,
        description='Show an audit and its actions.',
        operations=[{'method': 'GET', 'path': '/v1/audits/{uuid}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
