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

"""The ini editing behind fake_devstack.sh's iniset, iniget and kin.

``python inifile.py COMMAND FILE SECTION OPTION [VALUE...]`` edits FILE in
place, line by line, so that an option may have several lines (Nova's
multi-valued ``available_filters``), with the semantics of DevStack's
inc/ini-config that memagg's plug-in relies on:

``set``
    one ``OPTION = VALUE`` line in SECTION, where the option's first line
    was or else right under the section's header; the section is appended
    when missing, the file created when missing.
``set-multi``
    one line per VALUE, replacing every line of the option.
``get``
    print the value of the option's first line (nothing when unset).
``get-multi``
    print the values of all its lines, separated by spaces.
"""
import pathlib
import re
import sys


def _read(path):
    return path.read_text().splitlines() if path.exists() else []


def _section(lines, section):
    """(first, end): the indexes of SECTION's header line and of the line
    after its last one; None when there is no such section."""
    header = '[%s]' % section
    first = next((i for i, line in enumerate(lines)
                  if line.strip() == header), None)
    if first is None:
        return None
    end = next((i for i in range(first + 1, len(lines))
                if lines[i].lstrip().startswith('[')), len(lines))
    return first, end


def _option_lines(lines, bounds, option):
    pattern = re.compile(r'^%s\s*=' % re.escape(option))
    return [i for i in range(bounds[0] + 1, bounds[1])
            if pattern.match(lines[i])]


def _values(lines, bounds, option):
    return [lines[i].split('=', 1)[1].strip()
            for i in _option_lines(lines, bounds, option)]


def set_values(path, section, option, values):
    lines = _read(path)
    bounds = _section(lines, section)
    if bounds is None:
        lines += ([''] if lines else []) + ['[%s]' % section]
        bounds = (len(lines) - 1, len(lines))
    found = _option_lines(lines, bounds, option)
    at = found[0] if found else bounds[0] + 1
    for i in reversed(found):
        del lines[i]
    lines[at:at] = ['%s = %s' % (option, value) for value in values]
    path.write_text('\n'.join(lines) + '\n')


def get_values(path, section, option):
    lines = _read(path)
    bounds = _section(lines, section)
    return _values(lines, bounds, option) if bounds else []


def main(command, file, section, option, *values):
    path = pathlib.Path(file)
    if command == 'set':
        set_values(path, section, option, values[:1])
    elif command == 'set-multi':
        set_values(path, section, option, values)
    elif command == 'get':
        print(next(iter(get_values(path, section, option)), ''))
    elif command == 'get-multi':
        print(' '.join(get_values(path, section, option)))
    else:
        sys.exit('inifile.py: unknown command %s' % command)


if __name__ == '__main__':
    main(*sys.argv[1:])
