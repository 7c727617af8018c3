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

"""Guru Meditation Reports (oslo.reports) for memagg's Python services.

SIGUSR2 makes a service write a report of its threads' stacks, its
configuration and its package version to stderr (its log when run by
systemd or DevStack), or to a file in ``[oslo_reports] log_dir`` when set.
``[oslo_reports] file_event_handler`` names a file whose modification
triggers the same report: the only trigger in memagg-api, whose uWSGI
workers keep SIGUSR2 for uWSGI's own backtrace.
"""
from oslo_reports import guru_meditation_report as gmr
from oslo_reports import opts as gmr_opts

from memagg import version


def enable(conf, service_name, on_signal=True):
    """Register [oslo_reports] on ``conf`` and arm the report for this
    process (call it once the configuration is parsed); ``on_signal``:
    also on SIGUSR2."""
    gmr_opts.set_defaults(conf)
    gmr.TextGuruMeditation.setup_autorun(
        version, service_name=service_name, conf=conf,
        setup_signal=on_signal)
