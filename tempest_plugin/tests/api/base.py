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

"""Base class of memagg's API tests: credentials, clients, microversions
and the checks every resource's tests share."""
import urllib.parse

from tempest.lib.common import api_version_utils
from tempest.lib import exceptions as lib_exc
from tempest import config
from tempest import test

CONF = config.CONF


class BaseMemaggTest(api_version_utils.BaseMicroversionTest,
                     test.BaseTestCase):
    """memagg's policies default to admin: ``client`` calls as an admin,
    ``member_client`` as a member of a fresh project (dynamic credentials),
    which owns no instance and may call no admin-only route.

    Tests do not assume an empty cloud, nor a populated one: lists are
    checked for what they return, and a test that needs an existing object
    skips when there is none.
    """

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.memagg:
            raise cls.skipException('memagg is not deployed '
                                    '([service_available] memagg = False)')
        api_version_utils.check_skip_with_microversion(
            cls.min_microversion, cls.max_microversion,
            CONF.memagg.min_microversion, CONF.memagg.max_microversion)

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.client = cls.os_admin.memagg.MemaggClient()
        cls.member_client = cls.os_primary.memagg.MemaggClient()

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        cls.request_microversion = (
            api_version_utils.select_request_microversion(
                cls.min_microversion, CONF.memagg.min_microversion))
        cls.client.api_microversion = cls.request_microversion
        cls.member_client.api_microversion = cls.request_microversion

    def use_microversion(self, version):
        """Send ``version`` from both clients for the rest of this test;
        skip the test when [memagg] min/max_microversion exclude it."""
        api_version_utils.check_skip_with_microversion(
            version, version, CONF.memagg.min_microversion,
            CONF.memagg.max_microversion)
        self.send_microversion(version)

    def send_microversion(self, version):
        """Send ``version`` as it is, even one the API must refuse, from
        both clients for the rest of this test."""
        for client in (self.client, self.member_client):
            self.addCleanup(setattr, client, 'api_microversion',
                            client.api_microversion)
            client.api_microversion = version

    def list_all(self, list_method, collection, *args, **params):
        """Every item of ``collection`` (``list_method(*args, **params)``),
        following the next links page by page; each must move the
        marker."""
        items, seen_markers = [], set()
        while True:
            body = list_method(*args, **params)
            items.extend(body[collection])
            following = [link['href'] for link in body['links']
                         if link['rel'] == 'next']
            if not following:
                return items
            query = dict(urllib.parse.parse_qsl(
                urllib.parse.urlsplit(following[0]).query))
            self.assertNotIn(query['marker'], seen_markers)
            seen_markers.add(query['marker'])
            params = query

    def first_or_skip(self, items, what):
        """The first of ``items``, or skip: this cloud has no ``what``."""
        if not items:
            raise self.skipException('this cloud has no %s to show' % what)
        return items[0]

    def assert_bad_request(self, field, call, *args, **kwargs):
        """``call`` is refused with 400 naming ``field``."""
        exc = self.assertRaises(lib_exc.BadRequest, call, *args, **kwargs)
        [error] = exc.resp_body
        self.assertEqual(400, error['status'])
        self.assertEqual(field, error.get('field'), error['detail'])
        return error

    def assert_not_allowed(self, allowed, call, *args, **kwargs):
        """``call`` is refused with 405 and an Allow header of
        ``allowed``: its route is below the microversion asked for while
        another method serves the path."""
        exc = self.assertRaises(lib_exc.UnexpectedResponseCode, call,
                                *args, **kwargs)
        self.assertEqual(405, exc.resp.status)
        self.assertEqual(allowed, exc.resp['allow'])
