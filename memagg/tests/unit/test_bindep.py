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

"""bindep.txt, tools/setup.sh and the DevStack plug-in name the same build
dependencies: what bindep installs for a build on a Debian machine,
setup.sh installs too, and libfabric's headers (memagg-swapd's rdma
transport) are in all three."""
import pathlib
import re

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]


def _bindep(platform):
    """The packages bindep.txt names for ``platform`` ('dpkg', 'rpm')."""
    names = set()
    for line in (REPO_ROOT / 'bindep.txt').read_text().splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        name, _, selector = line.partition(' ')
        platforms = re.findall(r'platform:(\w+)', selector)
        if not platforms or platform in platforms:
            names.add(name)
    return names


def _setup_packages():
    text = (REPO_ROOT / 'tools' / 'setup.sh').read_text()
    block = re.search(r'^APT_PACKAGES=\((.*?)^\)', text, re.M | re.S)
    return set(block.group(1).split())


def test_setup_sh_installs_what_bindep_names_for_a_debian_build():
    assert _bindep('dpkg') <= _setup_packages()


def test_libfabric_is_a_build_dependency_everywhere():
    assert {'libfabric-dev', 'libssl-dev'} <= _bindep('dpkg')
    assert {'libfabric-devel', 'openssl-devel'} <= _bindep('rpm')
    assert 'libfabric-dev' in _setup_packages()
    devstack = (REPO_ROOT / 'devstack' / 'lib' / 'memagg').read_text()
    assert 'libfabric-dev ' in devstack and 'libfabric-devel ' in devstack
    assert 'libibverbs' not in devstack
