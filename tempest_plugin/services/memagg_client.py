"""A tempest REST client of memagg-api v1."""
from oslo_serialization import jsonutils
from tempest.lib.common import rest_client

# The service type named in OpenStack-API-Version.
SERVICE_TYPE = 'memory-aggregation'


class MemaggClient(rest_client.RestClient):
    """Calls memagg-api with the microversion a test chose."""

    api_microversion = None

    def get_headers(self, accept_type=None, send_type=None):
        headers = super().get_headers(accept_type, send_type)
        if self.api_microversion:
            headers['OpenStack-API-Version'] = '%s %s' % (
                SERVICE_TYPE, self.api_microversion)
        return headers

    def _get_json(self, url):
        resp, body = self.get(url)
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, jsonutils.loads(body))

    def list_services(self, **params):
        """GET /v1/services; ``params`` become the query string."""
        url = 'v1/services'
        if params:
            url += '?' + '&'.join('%s=%s' % item
                                  for item in sorted(params.items()))
        return self._get_json(url)
