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

"""memagg's REST API v1 (memagg-api).

Built on Flask rather than webob + routes because:

* routing is declarative (a rule per route, converters for path
  parameters) and 404/405 come from the router with the allowed methods,
  so memagg's route table (memagg.api.controllers.base.ROUTES) maps onto it
  one to one and drives the OpenAPI document too;
* Flask's test client exercises the whole WSGI pipeline in unit tests
  without a server;
* Keystone runs on Flask, so an OpenStack operator and developer already
  know it; webob + routes would mean hand-writing the dispatch, the
  method checks and the request/response glue Flask already has.

The WSGI pipeline (memagg.api.app.create_app): oslo.middleware request_id,
JSON errors, keystonemiddleware auth_token or noauth, then Flask. Policies
are in code (memagg.api.policies), versions are microversions
(memagg.api.microversion) and every query is checked against JSON Schemas
(memagg.api.schemas, memagg.api.validation).

May import conf, common, objects, notifications, db, drivers and the
scheduler (what the API begins and memagg-scheduler carries out, and its
rpcapi), never the WSGI entry points, the console scripts or the client.
"""
