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

"""Loading memagg's plug-ins with stevedore: one way for every family.

A family is an entry-point namespace (memagg.hypervisor, memagg.wss, ...);
the plug-in is named by an option, and a name no plug-in has fails at start
with an error naming that option and listing the installed plug-ins.
"""
from oslo_config import cfg
from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exc
from stevedore import extension

from memagg.common import exceptions


def names(namespace):
    """Names of the installed plug-ins of ``namespace``, sorted."""
    return sorted(extension.ExtensionManager(namespace).names())


def load(namespace, name, option, kind, args=(), invoke=True):
    """Plug-in ``name`` of ``namespace``, constructed with ``args`` (its
    class when ``invoke`` is false).

    Raises InvalidParameter naming ``option`` (``'[group] name'``) when no
    installed ``kind`` of plug-in has that name.
    """
    try:
        manager = stevedore_driver.DriverManager(
            namespace=namespace, name=name, invoke_on_load=invoke,
            invoke_args=tuple(args))
    except stevedore_exc.NoMatches:
        raise exceptions.InvalidParameter(
            field=option, reason='no %s %r; use one of %s'
            % (kind, name, ', '.join(names(namespace))))
    return manager.driver


def check_option(ok, group, name, reason):
    """Raise InvalidParameter naming option [``group``] ``name`` with
    ``reason`` unless ``ok``."""
    if not ok:
        raise exceptions.InvalidParameter(field='[%s] %s' % (group, name),
                                          reason=reason)


def option_value(conf, group, name):
    """``conf.<group>.<name>``; a value oslo.config rejects is raised as
    InvalidParameter naming the option."""
    try:
        return getattr(conf[group], name)
    except (cfg.ConfigFileValueError, ValueError) as exc:
        # oslo.config's message leads with where the value came from; the
        # field already says which option, keep what is wrong with it.
        reason = str(exc).rsplit('is not valid: ', 1)[-1]
        raise exceptions.InvalidParameter(
            field='[%s] %s' % (group, name), reason=reason)
