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

"""The shape of memagg's imports: no module imports itself back (directly
or through others), imports run from a layer down to those below it only
(the layers of doc/source/contributor/architecture.rst), no two C files of
native/ include each other's headers, every package says what it is for,
no file grows past the length at which it holds more than one job, and the
client (python-memaggclient) imports nothing but the standard library and
what its requirements.txt names, memagg least of all.

Read from the source (every import statement, a function's too), not by
importing it, so that a circle Python tolerates at run time is found all
the same."""
import ast
import collections
import pathlib
import re
import sys

from packaging import requirements

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = REPO_ROOT / 'memagg'

ARCHITECTURE = REPO_ROOT / 'doc/source/contributor/architecture.rst'
CLIENT = REPO_ROOT / 'python-memaggclient'

#: The top-level modules python-memaggclient may import besides the
#: standard library: its own, and those of its requirements.txt
#: (test_the_client_imports_only_what_it_requires holds the two together);
#: its tests pytest too.
CLIENT_IMPORTS = {'memaggclient': 'memaggclient', 'keystoneauth1':
                  'keystoneauth1', 'osc_lib': 'osc-lib', 'cliff': 'cliff'}
CLIENT_TEST_IMPORTS = {'pytest'}


def _layers():
    """memagg's layers, lowest first, as architecture.rst lists them: a
    tuple of package names each."""
    text = ARCHITECTURE.read_text()
    listed = text.split('.. layers start')[1].split('.. layers end')[0]
    return tuple(tuple(re.findall(r'``(\w+)``', item.split(':')[0]))
                 for item in re.findall(r'^#\. (.*)$', listed, re.M))


LAYERS = _layers()

#: The seam between services (as in Nova): a service calls another
#: through its rpcapi module, whichever layer it is in.
SEAM = 'rpcapi'

#: Past these a file holds more than one job (issue 33): Python modules
#: and C sources and headers outside the tests and the alembic migrations.
MAX_LINES = {'.py': 600, '.c': 1200, '.h': 1200}

#: Where the line limits apply: memagg, its client, the benchmarks, the
#: tools and the docs' extensions (Python), memagg's native code (C).
SOURCES = (('memagg', '.py'), ('python-memaggclient', '.py'),
           ('benchmarks', '.py'), ('tools', '.py'), ('doc/ext', '.py'),
           ('native', '.c'), ('native', '.h'))


def _modules():
    """{dotted name: path} of memagg's modules, its tests aside."""
    modules = {}
    for path in PACKAGE.rglob('*.py'):
        parts = path.relative_to(REPO_ROOT).with_suffix('').parts
        if 'tests' in parts:
            continue
        if parts[-1] == '__init__':
            parts = parts[:-1]
        modules['.'.join(parts)] = path
    return modules


def _imported(name, path, modules):
    """The memagg modules ``name`` imports (the nearest module of each
    dotted name), its own packages aside: a package is always imported
    before its modules."""
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')
                parent = parts[:len(parts) - node.level + 1]
                base = '.'.join(parent + ([base] if base else []))
            targets = ['%s.%s' % (base, alias.name)
                       if '%s.%s' % (base, alias.name) in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition('.')[0]
            if (target and target != name
                    and not name.startswith(target + '.')):
                found.add(target)
    return found


def _graph():
    modules = _modules()
    return {name: _imported(name, path, modules)
            for name, path in modules.items()}


def _circles(graph):
    """The strongly connected parts of ``graph`` with more than one node
    (Tarjan's algorithm, iterative), each as a sorted tuple."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in graph:
                    continue
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        circles.append(tuple(sorted(part)))
    return circles


def _layer(name):
    top = name.split('.')[1] if '.' in name else ''
    for rank, packages in enumerate(LAYERS):
        if top in packages:
            return rank
    return None


def test_every_package_has_a_layer():
    unplaced = sorted({name.split('.')[1] for name in _modules()
                       if '.' in name and _layer(name) is None})
    assert not unplaced, (
        'memagg packages in no layer: %s; add them to the layers of %s'
        % (', '.join(unplaced), ARCHITECTURE))


def test_every_package_says_what_it_is_for():
    silent = sorted(name for name, path in _modules().items()
                    if path.name == '__init__.py'
                    and not ast.get_docstring(ast.parse(path.read_text())))
    assert not silent, (
        'packages without a docstring saying what they are for and what '
        'they may import: %s' % ', '.join(silent))
    # Each says which others it may import, subpackages too.
    unsaid = sorted(
        name for name, path in _modules().items()
        if path.name == '__init__.py' and name != 'memagg'
        and 'import' not in ast.get_docstring(ast.parse(path.read_text())))
    assert not unsaid, (
        'packages whose docstring does not say what they may import: %s'
        % ', '.join(unsaid))


def test_no_python_module_imports_itself_back():
    circles = _circles(_graph())
    assert not circles, (
        'import circles (each module imports the next, through others): '
        '%s' % '; '.join(' <-> '.join(circle) for circle in circles))


def test_python_imports_run_downward():
    upward = {(name, target)
              for name, targets in _graph().items() for target in targets
              if target.rpartition('.')[2] != SEAM
              and _layer(name) is not None and _layer(target) is not None
              and _layer(target) > _layer(name)}
    assert not upward, (
        'imports from a lower layer up to a higher one (the layers of '
        'doc/source/contributor/architecture.rst): %s'
        % ', '.join('%s -> %s' % pair for pair in sorted(upward)))


def _c_graph():
    """{native/dir/name: the native/... files whose headers it includes},
    a .c and its .h being one node."""
    graph = collections.defaultdict(set)
    for path in (REPO_ROOT / 'native').rglob('*'):
        if path.suffix not in ('.c', '.h'):
            continue
        node = path.relative_to(REPO_ROOT).with_suffix('').as_posix()
        graph[node]
        for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"',
                                 path.read_text(errors='replace'), re.M):
            target = (path.parent / header).resolve()
            if REPO_ROOT in target.parents:
                included = target.relative_to(REPO_ROOT).with_suffix('')
                if included.as_posix() != node:
                    graph[node].add(included.as_posix())
    return graph


def test_no_c_files_include_each_other():
    circles = sorted(_circles(_c_graph()))
    assert not circles, (
        'C include circles (each file includes the next one\'s header, '
        'through others): %s' % '; '.join(' <-> '.join(c) for c in circles))


def test_no_file_is_doing_more_than_one_job():
    long = {}
    for root, suffix in SOURCES:
        for path in (REPO_ROOT / root).rglob('*' + suffix):
            name = path.relative_to(REPO_ROOT).as_posix()
            if '/tests/' in name or '/alembic/versions/' in name:
                continue
            lines = len(path.read_text(errors='replace').splitlines())
            if lines > MAX_LINES[suffix]:
                long[name] = lines
    assert not long, (
        'files past %d lines (Python) or %d (C): %s; split them along '
        'their jobs' % (MAX_LINES['.py'], MAX_LINES['.c'], long))


def _top_level_imports(path):
    """The top-level module names ``path`` imports (absolute imports)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module.split('.')[0]


def test_the_client_imports_only_what_it_requires():
    """memaggclient installs without the server (no compiler, no libvirt):
    none of its modules, tests included, may import memagg or anything
    its requirements do not bring."""
    required = {requirements.Requirement(line).name for line in (
        line.split('#', 1)[0].strip()
        for line in (CLIENT / 'requirements.txt').read_text().splitlines())
        if line}
    assert set(CLIENT_IMPORTS.values()) - {'memaggclient'} <= required
    stray = []
    for path in sorted((CLIENT / 'memaggclient').rglob('*.py')):
        allowed = set(CLIENT_IMPORTS) | set(sys.stdlib_module_names)
        if 'tests' in path.relative_to(CLIENT).parts:
            allowed |= CLIENT_TEST_IMPORTS
        stray += ['%s imports %s' % (path.relative_to(REPO_ROOT), name)
                  for name in sorted(set(_top_level_imports(path)))
                  if name not in allowed]
    assert not stray, (
        'python-memaggclient imports beyond the standard library and its '
        'requirements (%s): %s' % (', '.join(sorted(CLIENT_IMPORTS)),
                                   '; '.join(stray)))


def test_the_walk_finds_a_circle_and_an_upward_import():
    """The checks above can fail: a hand-made circle is found, and so is
    a common module importing the scheduler."""
    graph = {'memagg.common.a': {'memagg.scheduler.b'},
             'memagg.scheduler.b': {'memagg.common.a'},
             'memagg.conf.c': set()}
    assert _circles(graph) == [('memagg.common.a', 'memagg.scheduler.b')]
    assert _layer('memagg.scheduler.b') > _layer('memagg.common.a')
