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

import glob

import setuptools

# memagg._native: the C page sampler (native/src); memagg._swapd: the C core
# of memagg-swapd (native/swapd, with its one-sided transport over libfabric
# and OpenSSL's libcrypto for the page keys).
# pbr still drives the package metadata from setup.cfg.
native = setuptools.Extension(
    'memagg._native',
    sources=sorted(glob.glob('native/src/*.c')),
    depends=sorted(glob.glob('native/src/*.h')),
    extra_compile_args=['-std=gnu11', '-Wall', '-Wextra', '-Werror'],
)

swapd = setuptools.Extension(
    'memagg._swapd',
    sources=sorted(glob.glob('native/swapd/*.c')),
    depends=sorted(glob.glob('native/swapd/*.h')),
    libraries=['pthread', 'fabric', 'crypto'],
    extra_compile_args=['-std=gnu11', '-Wall', '-Wextra', '-Werror'],
)

setuptools.setup(setup_requires=['pbr>=6.0.0'], pbr=True,
                 ext_modules=[native, swapd])
