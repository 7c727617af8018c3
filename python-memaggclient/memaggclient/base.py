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

"""What every resource's manager shares: pages of a collection and how to
follow them."""
import datetime
import urllib.parse


def quote(value):
    """``value`` as one path segment."""
    return urllib.parse.quote(str(value), safe='')


def _query_value(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return value


class Page:
    """One page of a collection.

    ``items`` are the page's items as the API gives them (dicts);
    ``next_marker`` is the marker of the next page, None on the last one
    (a page shorter than its limit). ``all_items()`` iterates over this
    page's items and every following page's, following the API's
    ``next`` links.
    """

    def __init__(self, http, collection, body, path):
        self._http = http
        self._collection = collection
        self._path = path
        self.items = body[collection]
        self.next_link = next((link['href'] for link in body['links']
                               if link['rel'] == 'next'), None)
        self.next_marker = None
        self._next_query = None
        if self.next_link:
            self._next_query = urllib.parse.parse_qs(
                urllib.parse.urlsplit(self.next_link).query)
            self.next_marker = self._next_query['marker'][0]

    def __repr__(self):
        return '<Page of %d %s, next marker %r>' % (
            len(self.items), self._collection, self.next_marker)

    def next_page(self):
        """The following page, or None when this is the last."""
        if not self.next_link:
            return None
        # The link's query on this page's path at the client's endpoint:
        # the link may be a path from the server's root, which holds the
        # API's prefix that the endpoint holds too.
        return Page(self._http, self._collection,
                    self._http.request('GET', self._path,
                                       params=self._next_query),
                    self._path)

    def all_items(self):
        """Iterate over the items of this page and of every next page."""
        page = self
        while page is not None:
            yield from page.items
            page = page.next_page()


class Manager:
    """A resource's operations, bound to the client's HTTPClient."""

    def __init__(self, http):
        self._http = http

    def _page(self, path, collection, limit=None, marker=None,
              sort_key=None, sort_dir=None, **filters):
        params = dict(filters, limit=limit, marker=marker,
                      sort_key=sort_key, sort_dir=sort_dir)
        params = {k: _query_value(v) for k, v in params.items()
                  if v is not None}
        return Page(self._http, collection,
                    self._http.request('GET', path, params=params), path)

    def _get(self, path, key):
        return self._http.request('GET', path)[key]
