"""Policies of /v1/audits."""
from memagg.api.policies import base

LIST = 'memagg:audit:list'
GET = 'memagg:audit:get'
CREATE = 'memagg:audit:create'
EXECUTE = 'memagg:audit:execute'

rules = [
    base.get_rule(
        LIST, base.ADMIN,
        'List consolidation audits.',
        '/v1/audits'),
    base.get_rule(
        GET, base.ADMIN,
        'Show an audit and its actions.',
        '/v1/audits/{uuid}'),
    base.rule(
        CREATE, base.ADMIN,
        'Start a consolidation round (an audit) on demand.',
        'POST', '/v1/audits'),
    base.rule(
        EXECUTE, base.ADMIN,
        'Execute a recommended audit\'s plan: live-migrate VMs through '
        'Nova and power hosts.',
        'POST', '/v1/audits/{uuid}/execute'),
]


def list_rules():
    return rules
