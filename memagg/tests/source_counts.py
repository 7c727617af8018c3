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

"""What the test files of a directory hold, read from their source."""
import ast


def count_test_methods(directory):
    """The test methods of the test classes in ``directory``'s test_*.py
    files (recursively), read from the source, so that tests a runner
    failed to load still count."""
    count = 0
    for path in directory.rglob('test_*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                count += sum(1 for item in node.body
                             if isinstance(item, ast.FunctionDef)
                             and item.name.startswith('test_'))
    return count
