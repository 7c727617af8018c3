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

"""The registry of memagg's versioned objects: every object's fields and
version pinned, so that a change to what crosses the wire bumps its
version."""
from oslo_versionedobjects import fixture as ovo_fixture

# The notifications' payloads are versioned objects too, sent and never
# read back: imported so that the registry holds them.
from memagg.notifications import audit  # noqa: F401
from memagg.notifications import grant  # noqa: F401
from memagg.notifications import migration  # noqa: F401
from memagg import objects
from memagg.objects import base

# Changing an object's fields changes its hash: bump its VERSION (and keep
# the old version readable) before updating the hash here.
EXPECTED_FINGERPRINTS = {
    'ActionPayload': '1.0-239c715251e79a15769a111ccc5b8f92',
    'AuditPayload': '1.0-f1001ffabb8f0183df216a403acb3867',
    'ComputeReport': '1.6-3115e3419c745c694505deb9eac2d776',
    'GrantLedger': '1.0-ce0aded1f5723460147290ab6c791739',
    'GrantPayload': '1.0-c2d0f1669f76719e078177c199274f05',
    'MigrationPayload': '1.0-69ff8df514a8e0bf5770e2efad6b13ed',
    'InstanceReport': '1.5-2b72d43cfd4db3e59a69b5c7d141a09e',
    'WssSample': '1.3-e307aa6cd0ef770a926d628f647380d6',
}


def test_object_versions_are_pinned():
    objects.register_all()
    # oslo.versionedobjects keeps one registry for every project: Nova's
    # objects are in it too once memagg.nova's tests have imported Nova.
    checker = ovo_fixture.ObjectVersionChecker({
        name: classes for name, classes
        in base.MemaggObjectRegistry.obj_classes().items()
        if classes[0].OBJ_PROJECT_NAMESPACE
        == base.MemaggObject.OBJ_PROJECT_NAMESPACE})
    expected, actual = checker.test_hashes(EXPECTED_FINGERPRINTS)
    assert expected == actual, (
        'An object changed: bump its VERSION and update '
        'EXPECTED_FINGERPRINTS with %s' % actual)
