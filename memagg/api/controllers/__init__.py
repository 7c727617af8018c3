"""The API's controllers, one module per resource; importing this package
registers every route in memagg.api.controllers.base.ROUTES."""
from memagg.api.controllers import audits  # noqa: F401
from memagg.api.controllers import grants  # noqa: F401
from memagg.api.controllers import hosts  # noqa: F401
from memagg.api.controllers import instances  # noqa: F401
from memagg.api.controllers import migrations  # noqa: F401
from memagg.api.controllers import reservoir  # noqa: F401
from memagg.api.controllers import root  # noqa: F401
from memagg.api.controllers import services  # noqa: F401
