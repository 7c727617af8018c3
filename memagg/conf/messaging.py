# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""oslo.messaging's [DEFAULT] options (transport_url, control_exchange,
rpc_response_timeout, ...) registered up front with memagg's defaults.

oslo.messaging registers them only when a transport or client is built;
memagg registers them with the other groups so every process (and a test)
can read and override them before that. The sample config lists them
through the generator's ``oslo.messaging`` namespace.
"""
import oslo_messaging
from oslo_messaging._metrics import client as messaging_metrics
from oslo_messaging._tracing import client as messaging_tracing
from oslo_messaging import opts as messaging_opts

CONTROL_EXCHANGE = 'memagg'


def register_opts(conf):
    # Defaults first: oslo.messaging registers its own copies of these
    # options later, and a copy with another default would be a conflict.
    oslo_messaging.set_transport_defaults(CONTROL_EXCHANGE)
    for group, opts in messaging_opts.list_opts():
        if group is None:
            conf.register_opts(opts)
    # oslo.messaging registers its [oslo_messaging_metrics] and
    # [oslo_messaging_tracing] options on the global cfg.CONF only, yet
    # reads them from the transport's conf on every cast and call; memagg's
    # conf is its own (memagg.conf), so it registers them itself. The
    # modules are private: they are the options' only home.
    conf.register_opts(messaging_metrics.oslo_messaging_metrics,
                       group='oslo_messaging_metrics')
    conf.register_opts(messaging_tracing.oslo_messaging_tracing,
                       group='oslo_messaging_tracing')


def set_lib_defaults():
    oslo_messaging.set_transport_defaults(CONTROL_EXCHANGE)
