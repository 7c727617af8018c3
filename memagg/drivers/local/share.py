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

"""Sharing a pool of MiB among claimants, in whole MiB."""
import math


def _whole(shares, caps, pool):
    """Round float ``shares`` down, then hand the MiB lost to rounding to
    the largest fractions (never above a cap); ties go by key."""
    result = {key: min(caps[key], math.floor(share + 1e-9))
              for key, share in shares.items()}
    left = min(pool, sum(caps.values())) - sum(result.values())
    order = sorted(shares, key=lambda key: (-(shares[key] - result[key]),
                                            key))
    for key in order:
        if left <= 0:
            break
        if result[key] < caps[key]:
            result[key] += 1
            left -= 1
    return result


def proportional(pool, demands):
    """{key: MiB} sharing ``pool`` in proportion to ``demands`` (MiB), none
    above its demand; everyone is met when the pool suffices."""
    demands = {key: max(0, int(d)) for key, d in demands.items()}
    total = sum(demands.values())
    if pool <= 0 or total == 0:
        return {key: 0 for key in demands}
    if pool >= total:
        return dict(demands)
    return _whole({key: pool * d / total for key, d in demands.items()},
                  demands, pool)


def equal(pool, demands):
    """{key: MiB} giving every claimant the same amount of ``pool``, none
    above its demand (what a capped claimant leaves goes to the others)."""
    demands = {key: max(0, int(d)) for key, d in demands.items()}
    shares = {key: 0.0 for key in demands}
    left = float(max(0, pool))
    # Water-filling: the smallest demands are met first, the rest share
    # what remains evenly.
    pending = sorted(demands, key=lambda key: (demands[key], key))
    while pending and left > 1e-9:
        each = left / len(pending)
        smallest = demands[pending[0]]
        if smallest <= each:
            shares[pending[0]] = smallest
            left -= smallest
            pending.pop(0)
        else:
            for key in pending:
                shares[key] = each
            left = 0.0
    return _whole(shares, demands, pool)


def by_mode(mode, pool, demands):
    """equal() or proportional() by name."""
    sharer = {'equal': equal, 'proportional': proportional}[mode]
    return sharer(pool, demands)
