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

"""Django for the panels' view tests, set up when they are collected (the
tests import Horizon's helpers, which read the settings)."""
import os

import django
from django.test import utils

os.environ['DJANGO_SETTINGS_MODULE'] = 'memagg.tests.unit.dashboard.settings'
django.setup()
# Loaded now; the processes later tests start need not inherit it.
del os.environ['DJANGO_SETTINGS_MODULE']
utils.setup_test_environment()
