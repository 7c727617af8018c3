"""The compute API interface (Nova, as memagg sees it) and its loader.

A compute API driver answers questions about a VM that only the cloud's
compute service knows. For the weighted local policy (ALGORITHMS.md §2.3)
that is the VM's QoS weight ``memagg:weight``: the flavor extra spec wins
over the image property; a VM that has neither has no weight of its own
and the policy gives it [local_policy] default_weight.
"""
import abc
import dataclasses

from memagg.common import plugins

NAMESPACE = 'memagg.compute_api'
OPTION = '[compute] compute_api_driver'

#: The flavor extra spec and image property naming a VM's QoS weight.
WEIGHT_KEY = 'memagg:weight'

FLAVOR = 'flavor'
IMAGE = 'image'


@dataclasses.dataclass(frozen=True)
class QosWeight:
    """A VM's ``memagg:weight`` as found (a number or a class name such as
    gold, unparsed: the policy interprets it) and where it came from
    (FLAVOR or IMAGE); both None when the VM names no weight."""

    value: str | None = None
    source: str | None = None


NO_WEIGHT = QosWeight()


def pick_weight(extra_specs, image_properties):
    """The QosWeight of a VM with flavor ``extra_specs`` and image
    ``image_properties`` (dicts, or None when unknown): the flavor's wins."""
    for source, values in ((FLAVOR, extra_specs), (IMAGE, image_properties)):
        value = (values or {}).get(WEIGHT_KEY)
        if value is not None and str(value).strip():
            return QosWeight(value=str(value).strip(), source=source)
    return NO_WEIGHT


class InstanceNotFound(Exception):
    """The compute service does not know this VM."""


class ComputeApiUnavailable(Exception):
    """The compute service (or the image service) did not answer usefully:
    unreachable, refused the credentials, or failed."""


class ComputeApi(metaclass=abc.ABCMeta):
    """The compute service, as memagg needs it."""

    #: The plug-in's name in the memagg.compute_api namespace.
    name = None

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def get_qos_weight(self, instance_uuid):
        """The QosWeight of VM ``instance_uuid``: its flavor's extra spec
        memagg:weight, else its image's property, else NO_WEIGHT.

        Raises InstanceNotFound when the service does not know the VM and
        ComputeApiUnavailable when it cannot say.
        """


def load(conf):
    """The [compute] compute_api_driver plug-in, constructed with ``conf``.

    Raises InvalidParameter naming the option when no such plug-in exists.
    """
    return plugins.load(NAMESPACE, conf.compute.compute_api_driver, OPTION,
                        'compute API driver', args=(conf,))
