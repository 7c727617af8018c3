"""oslo.messaging's [DEFAULT] options (transport_url, control_exchange,
rpc_response_timeout, ...) registered up front with memagg's defaults.

oslo.messaging registers them only when a transport or client is built;
memagg registers them with the other groups so every process (and a test)
can read and override them before that. The sample config lists them
through the generator's ``oslo.messaging`` namespace.
"""
import oslo_messaging
from oslo_messaging import opts as messaging_opts

CONTROL_EXCHANGE = 'memagg'


def register_opts(conf):
    # Defaults first: oslo.messaging registers its own copies of these
    # options later, and a copy with another default would be a conflict.
    oslo_messaging.set_transport_defaults(CONTROL_EXCHANGE)
    for group, opts in messaging_opts.list_opts():
        if group is None:
            conf.register_opts(opts)


def set_lib_defaults():
    oslo_messaging.set_transport_defaults(CONTROL_EXCHANGE)
