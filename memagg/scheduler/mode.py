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

"""[scheduler] mode: whether memagg-scheduler carries out what it plans.

In observe mode audits are planned and stored but never executed, and no
grant of remote memory is made; memagg-scheduler and the API (which reads
the same option) refuse those requests with the one reason built here.
"""
from memagg.common import exceptions
from memagg.conf import scheduler as conf_scheduler


def observing(conf):
    """Whether ``conf`` sets [scheduler] mode = observe."""
    return conf.scheduler.mode == conf_scheduler.OBSERVE


#: Why a request is refused in observe mode, and how to allow it.
REASON = ('memagg-scheduler runs with [scheduler] mode = observe, which '
          'plans audits without executing them and grants no remote '
          'memory; set mode = manage to allow it')


def refusal(what):
    """REASON for ``what`` (e.g. 'audit X is not executed')."""
    return '%s: %s' % (what, REASON)


def check_manages(conf, what):
    """Conflict saying why ``what`` is refused, in observe mode."""
    if observing(conf):
        raise exceptions.Conflict(reason=refusal(what))
