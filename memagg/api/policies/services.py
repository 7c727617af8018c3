"""Policies of /v1/services."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:service:list'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description='List memagg services and whether each is up.',
        operations=[{'method': 'GET', 'path': '/v1/services'}],
        scope_types=['project']),
]


def list_rules():
    return rules
