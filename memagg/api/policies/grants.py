"""Policies of /v1/grants."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:grant:list'
GET = 'memagg:grant:get'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description='List remote-memory grants.',
        operations=[{'method': 'GET', 'path': '/v1/grants'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN,
        description='Show a grant and its slabs.',
        operations=[{'method': 'GET', 'path': '/v1/grants/{uuid}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
