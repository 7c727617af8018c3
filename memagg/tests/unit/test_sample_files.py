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

"""The sample config and policy files are generated from the code by the
generator files in etc/memagg/; this runs the generators as an operator
would and checks that nothing memagg defines is missing."""
import os
import re
import subprocess
import sys

import pytest
import yaml

from memagg.api import policies
from memagg.conf import opts
from memagg.nova import conf as nova_opts

pytestmark = pytest.mark.slow

ETC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'etc',
                   'memagg')


def _generate(tool, generator_file, output):
    script = os.path.join(os.path.dirname(sys.executable), tool)
    process = subprocess.run(
        [script, '--config-file', os.path.join(ETC, generator_file),
         '--output-file', str(output)],
        capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)
    assert process.returncode == 0, process.stderr
    return output.read_text()


def _sample_options(text):
    """{group: {option names}} of an oslo-config-generator sample."""
    groups, group = {}, None
    for line in text.splitlines():
        header = re.match(r'^\[(.+)\]$', line)
        if header:
            group = groups.setdefault(header.group(1), set())
            continue
        option = re.match(r'^#([A-Za-z_][\w-]*) =( |$)', line)
        if option:
            group.add(option.group(1))
    return groups


def test_config_sample_has_every_memagg_option(tmp_path):
    text = _generate('oslo-config-generator', 'memagg-config-generator.conf',
                     tmp_path / 'memagg.conf.sample')

    sample = _sample_options(text)
    for group, group_opts in opts.list_opts():
        name = getattr(group, 'name', group)
        assert name in sample, 'no [%s] in the sample' % name
        missing = {o.dest for o in group_opts} - sample[name]
        assert not missing, 'options of [%s] missing: %s' % (name, missing)
    # The libraries the services load are documented too.
    for library_group in ('keystone_authtoken', 'oslo_messaging_rabbit',
                          'oslo_policy', 'oslo_middleware'):
        assert library_group in sample
    # memagg's defaults, not the libraries', are shown.
    assert ('#connection = sqlite:////var/lib/memagg/memagg.sqlite'
            in text.splitlines())


def test_nova_config_sample_has_every_memagg_option(tmp_path):
    # nova.conf's [memagg] (namespace memagg.nova, an entry point: after
    # changing setup.cfg, pip install -e . again).
    text = _generate('oslo-config-generator',
                     'nova-memagg-config-generator.conf',
                     tmp_path / 'nova.conf.memagg.sample')

    sample = _sample_options(text)
    [(_, group_opts)] = nova_opts.list_opts()
    assert sample == {'DEFAULT': set(),
                      'memagg': {o.dest for o in group_opts}}
    assert '#on_failure = open' in text.splitlines()
    assert '#service_type = memory-aggregation' in text.splitlines()


def test_policy_sample_has_every_rule(tmp_path):
    text = _generate('oslopolicy-sample-generator',
                     'memagg-policy-generator.conf',
                     tmp_path / 'policy.yaml.sample')

    # Every rule is in the sample, commented out: uncommented, the sample is
    # the default policy itself.
    uncommented = '\n'.join(line[1:] if line.startswith('#"') else line
                            for line in text.splitlines())
    expected = {rule.name: rule.check_str for rule in policies.list_rules()}
    assert expected
    assert yaml.safe_load(uncommented) == expected


def test_samples_are_not_committed():
    tracked = subprocess.run(
        ['git', 'ls-files', '--', 'etc/memagg'], capture_output=True,
        text=True, cwd=os.path.join(ETC, '..', '..'), timeout=30)
    if tracked.returncode != 0:
        pytest.skip('not a git checkout: %s' % tracked.stderr.strip())
    assert not [f for f in tracked.stdout.split() if f.endswith('.sample')]
