"""Policies of /v1/instances: an instance's project may read it."""
from oslo_policy import policy

from memagg.api.policies import base

LIST = 'memagg:instance:list'
LIST_ALL_PROJECTS = 'memagg:instance:list:all_projects'
GET = 'memagg:instance:get'
WSS = 'memagg:instance:wss'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.PROJECT_MEMBER,
        description='List instances. Unless memagg:instance:list:'
                    'all_projects also passes, only the caller\'s project\'s '
                    'instances are listed.',
        operations=[{'method': 'GET', 'path': '/v1/instances'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=LIST_ALL_PROJECTS,
        check_str=base.ADMIN,
        description='List the instances of every project.',
        operations=[{'method': 'GET', 'path': '/v1/instances'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=GET,
        check_str=base.ADMIN_OR_OWNER,
        description='Show an instance.',
        operations=[{'method': 'GET', 'path': '/v1/instances/{uuid}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=WSS,
        check_str=base.ADMIN_OR_OWNER,
        description='List the working-set samples of an instance.',
        operations=[{'method': 'GET', 'path': '/v1/instances/{uuid}/wss'}],
        scope_types=['project']),
]


def list_rules():
    return rules
