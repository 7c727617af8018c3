"""/v1/reservoir: the memory the cluster can lend and has lent."""
from memagg.api.controllers import base
from memagg.api.policies import reservoir as policy
from memagg.api import schemas
from memagg.api import views
from memagg.db import api as db_api


@base.route('/v1/reservoir', 'Show the memory reservoir in MiB: free, '
            'lendable, lent and borrowed, per host and in total.',
            schemas.item_response('reservoir', 'Reservoir'))
def get_reservoir(query):
    base.enforce(policy.GET)
    return {'reservoir': views.reservoir(
        db_api.reservoir_summary(base.context()))}
