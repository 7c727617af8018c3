"""Policies of /v1/reservoir."""
from oslo_policy import policy

from memagg.api.policies import base

GET = 'memagg:reservoir:get'

rules = [
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN,
        description='Show the memory reservoir: lendable, lent and '
                    'borrowed memory.',
        operations=[{'method': 'GET', 'path': '/v1/reservoir'}],
        scope_types=['project']),
]


def list_rules():
    return rules
