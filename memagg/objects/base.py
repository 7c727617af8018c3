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

"""Base classes of memagg's versioned objects (the payloads of its RPC)."""
from oslo_versionedobjects import base as ovo_base


class MemaggObjectRegistry(ovo_base.VersionedObjectRegistry):
    """The registry every memagg object class is added to."""


class MemaggObject(ovo_base.VersionedObject,
                   ovo_base.ComparableVersionedObject):
    """Base of every memagg versioned object.

    Objects are plain data carried over RPC; the database is written through
    memagg.db's resource modules, never by the objects themselves.
    """

    OBJ_SERIAL_NAMESPACE = 'memagg_object'
    OBJ_PROJECT_NAMESPACE = 'memagg'

    def as_dict(self):
        """The fields that are set, as a plain dict (nested objects too)."""
        # The scheduler runs this for each VM of every report:
        # obj_attr_is_set lists the object's fields at each call, 7 times
        # the cost of looking for the attribute ovo keeps a set field in.
        stored = self.__dict__
        result = {}
        for name in self.fields:
            attr = ovo_base._get_attrname(name)
            if attr not in stored:
                continue
            value = stored[attr]
            if isinstance(value, list):
                value = [v.as_dict() if isinstance(v, MemaggObject) else v
                         for v in value]
            elif isinstance(value, MemaggObject):
                value = value.as_dict()
            result[name] = value
        return result


class MemaggObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Turns memagg objects into primitives on the wire and back."""

    OBJ_BASE_CLASS = MemaggObject
