"""Policies of /v1/instances: an instance's project may read it."""
from memagg.api.policies import base

LIST = 'memagg:instance:list'
LIST_ALL_PROJECTS = 'memagg:instance:list:all_projects'
GET = 'memagg:instance:get'
WSS = 'memagg:instance:wss'

rules = [
    base.get_rule(
        LIST, base.PROJECT_MEMBER,
        'List instances. Unless memagg:instance:list:'
        'all_projects also passes, only the caller\'s project\'s '
        'instances are listed.',
        '/v1/instances'),
    base.get_rule(
        LIST_ALL_PROJECTS, base.ADMIN,
        'List the instances of every project.',
        '/v1/instances'),
    base.get_rule(
        GET, base.ADMIN_OR_OWNER,
        'Show an instance.',
        '/v1/instances/{uuid}'),
    base.get_rule(
        WSS, base.ADMIN_OR_OWNER,
        'List the working-set samples of an instance.',
        '/v1/instances/{uuid}/wss'),
]


def list_rules():
    return rules
