"""The request context passed from the API and over RPC."""
from oslo_context import context


class RequestContext(context.RequestContext):
    """oslo.context's context; memagg adds nothing yet but its constructors."""


def get_admin_context():
    """A context for memagg's own periodic work, with admin rights."""
    return RequestContext(is_admin=True, roles=['admin'],
                          overwrite=False)
