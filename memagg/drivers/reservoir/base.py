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

"""The interface of donor selection: which hosts lend the slabs of a grant.

A plug-in is constructed with its JSON parameters ([reservoir]
donor_selection_params), checked at once: an unknown key or a bad value
raises InvalidParameter naming ``[reservoir] donor_selection_params.<key>``.
"""
import abc
import json

from memagg.common import exceptions
from memagg.common import plugins

NAMESPACE = 'memagg.reservoir'
OPTION = '[reservoir] donor_selection'
PARAMS_OPTION = '[reservoir] donor_selection_params'


def positive_int(value):
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError('must be an integer of 1 or more, got %r'
                         % (value,))
    return value


class DonorSelection(metaclass=abc.ABCMeta):
    """Splits a request of slabs over donor hosts.

    Subclasses set ``name`` and ``PARAMS`` (key -> (default, checker)) and
    implement :meth:`_pick`; the checked parameters are in ``self.params``.
    """

    name = None
    PARAMS = {}

    def __init__(self, params=None):
        self.params = self._validate({} if params is None else params)

    def _validate(self, given):
        if not isinstance(given, dict):
            raise exceptions.InvalidParameter(
                field=PARAMS_OPTION,
                reason='must be a JSON object, got %r' % (given,))
        unknown = sorted(set(given) - set(self.PARAMS))
        if unknown:
            raise exceptions.InvalidParameter(
                field='%s.%s' % (PARAMS_OPTION, unknown[0]),
                reason='unknown parameter; %s takes %s' % (
                    self.name, ', '.join(sorted(self.PARAMS)) or 'none'))
        checked = {}
        for key, (default, check) in self.PARAMS.items():
            try:
                checked[key] = check(given[key]) if key in given else default
            except ValueError as exc:
                raise exceptions.InvalidParameter(
                    field='%s.%s' % (PARAMS_OPTION, key), reason=str(exc))
        return checked

    def select(self, request_slabs, slab_mb, donors, consumer_host, rng):
        """Where the slabs of a request go.

        ``donors`` is a list of ``(host, available_mb)``, where available
        already leaves out each donor's reserve and what it lends now;
        ``consumer_host`` is never picked, nor a donor with room for less
        than one slab of ``slab_mb`` MiB. ``rng`` is a random.Random.
        Returns ``[(host, n_slabs)]``, each host once, in the order first
        picked; the counts add up to ``request_slabs`` or, when the donors
        cannot hold that many, to less.
        """
        if request_slabs < 1 or slab_mb < 1:
            return []
        room = {host: int(available // slab_mb) for host, available in donors
                if host != consumer_host and available >= slab_mb}
        if not room:
            return []
        picked = {}
        for host, count in self._pick(request_slabs, dict(room), rng):
            if count > 0:
                picked[host] = picked.get(host, 0) + count
        return list(picked.items())

    @abc.abstractmethod
    def _pick(self, request_slabs, room, rng):
        """Yield ``(host, n_slabs)`` from ``room`` (host -> whole slabs it
        can hold, at least 1 each; the plug-in may change it), at most
        ``request_slabs`` in all and never more than a host's room."""


def load(name, params=None):
    """Plug-in ``name`` built with ``params``; an unknown name raises
    InvalidParameter naming [reservoir] donor_selection and listing the
    installed plug-ins."""
    cls = plugins.load(NAMESPACE, name, OPTION, 'donor selection plug-in',
                       invoke=False)
    return cls(params)


def load_from_group(group):
    """The donor selection plug-in [reservoir] (``group``, the option group
    or any object with its option attributes) names, with its JSON
    parameters; InvalidParameter naming the option when either is
    wrong."""
    params = group.donor_selection_params
    try:
        params = json.loads(params)
    except ValueError as exc:
        raise exceptions.InvalidParameter(
            field=PARAMS_OPTION,
            reason='not valid JSON (%s); write a JSON object such as '
                   '{"chunk_slabs": 4}' % exc)
    return load(group.donor_selection, params)
