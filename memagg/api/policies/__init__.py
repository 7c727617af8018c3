"""memagg's default policies, in code: one module per resource."""
import itertools

from memagg.api.policies import audits
from memagg.api.policies import base
from memagg.api.policies import grants
from memagg.api.policies import hosts
from memagg.api.policies import instances
from memagg.api.policies import migrations
from memagg.api.policies import reservoir
from memagg.api.policies import services


def list_rules():
    """Every default rule (oslo.policy.policies entry point)."""
    return list(itertools.chain(
        base.list_rules(), services.list_rules(), hosts.list_rules(),
        instances.list_rules(), reservoir.list_rules(), grants.list_rules(),
        audits.list_rules(), migrations.list_rules()))
