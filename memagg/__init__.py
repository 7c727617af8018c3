"""memagg: memory aggregation for OpenStack clouds.

memagg runs on native threads, never eventlet. oslo.messaging imports
oslo.service, whose default backend is eventlet, so memagg makes threading
the default here, before any memagg module can import oslo.messaging. A hook
rather than init_backend(): a host program that already chose a backend (the
sample config generator loads oslo.messaging first) keeps its choice.
"""
import warnings

from oslo_service import backend as _service_backend

# futurist imports eventlet merely because it is installed (oslo.service
# depends on it); nothing in memagg uses it, so its deprecation notice is
# noise on every command's stderr.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)
