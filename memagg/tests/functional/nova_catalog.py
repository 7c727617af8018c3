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

"""The Nova double (memagg.tests.functional.nova_double) in the real
Keystone's catalog, and memagg configured for it: its entries registered in
the catalog of the ``keystone`` fixture, the ids of the fixture's admin,
and the [compute] and [nova] options with which memagg's nova compute API
driver finds Nova through that catalog, authenticated as that admin.
"""
import contextlib

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from memagg.conf import compute as compute_conf
from memagg.conf import nova as nova_conf_module
from memagg.demo import keystone as demo_keystone


@contextlib.contextmanager
def in_catalog(keystone, entries):
    """Register ``entries`` ((service type, name, URL)) in Keystone's
    catalog, public and internal, in the fixture's region; remove them on
    exit."""
    admin = demo_keystone.Admin(keystone)
    services = []
    try:
        for service_type, name, url in entries:
            service = admin.call('POST', '/services', json={'service': {
                'type': service_type, 'name': name}})['service']['id']
            services.append(service)
            for interface in ('public', 'internal'):
                admin.call('POST', '/endpoints', json={'endpoint': {
                    'service_id': service, 'interface': interface,
                    'url': url, 'region_id': demo_keystone.REGION}})
        yield
    finally:
        for service in services:
            for endpoint in admin.call(
                    'GET', '/endpoints',
                    params={'service_id': service})['endpoints']:
                admin.call('DELETE', '/endpoints/' + endpoint['id'])
            admin.call('DELETE', '/services/' + service)


def admin_ids(keystone):
    """(project id, user id) of the fixture's admin."""
    admin = demo_keystone.Admin(keystone)
    account = keystone.admin
    return (account.project_id or admin.find('project',
                                             account.project_name),
            account.user_id or admin.find('user', account.username))


def nova_options(keystone):
    """The [nova] options of memagg authenticating as Keystone's admin
    (Nova's default policy lets admins show any project's servers,
    live-migrate them and update services)."""
    account = keystone.admin
    return {'auth_type': 'password', 'region_name': demo_keystone.REGION,
            'timeout': 10, 'auth_url': keystone.auth_url,
            'username': account.username, 'password': account.password,
            'project_name': account.project_name,
            'user_domain_id': 'default', 'project_domain_id': 'default'}


def nova_conf(monkeypatch, keystone, modules):
    """A ConfigOpts with [compute] compute_api_driver = nova and [nova]
    from nova_options(), plus the groups of ``modules`` (memagg.conf
    modules). Private, with its own [nova] OptGroup, since loading the
    password plug-in registers required options there."""
    monkeypatch.setattr(nova_conf_module, 'GROUP', cfg.OptGroup('nova'))
    conf = cfg.ConfigOpts()
    for module in (compute_conf, nova_conf_module) + tuple(modules):
        module.register_opts(conf)
    conf([], project='memagg', default_config_files=[])
    conf.set_override('compute_api_driver', 'nova', group='compute')
    # The plug-in's options exist once it is loaded; register them to set.
    conf.register_opts(
        ks_loading.get_auth_plugin_conf_options('password'), group='nova')
    for name, value in nova_options(keystone).items():
        conf.set_override(name, value, group='nova')
    return conf
