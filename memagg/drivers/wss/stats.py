"""Stats estimator (ALGORITHMS.md §1.1): the guest's own view of its
memory in use, from libvirt's balloon statistics.

used = available - usable (available - unused when the guest gives no
usable). Cheap, needs the balloon driver, blind to which pages are hot.
"""
from memagg.drivers.wss import base


def used_mb(stats):
    """Memory in use inside the guest in MiB from memoryStats (KiB), or
    None when the statistics lack what the formula needs."""
    if not stats:
        return None
    available = stats.get('available')
    free = stats.get('usable')
    if free is None:
        free = stats.get('unused')
    if available is None or free is None:
        return None
    return max(0, available - free) // 1024


class StatsEstimator(base.WssEstimator):
    """WSS = the guest's used memory; shortage from swap-in/fault rates."""

    name = 'stats'

    def estimate(self, obs):
        return base.Estimate(wss_mb=used_mb(obs.stats), source='stats',
                             shortage=base.shortage_signal(obs, self.params))
