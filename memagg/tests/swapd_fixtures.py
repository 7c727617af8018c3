"""Helpers of the remote-memory tests of memagg-compute.

register_opts: the [swapd] and [reservoir] options registered on CONF
(memagg.conf registers them in the processes; registering the same option
objects again changes nothing).
"""
from memagg.conf import reservoir as reservoir_conf
from memagg.conf import swapd as swapd_conf


def register_opts(conf):
    swapd_conf.register_opts(conf)
    reservoir_conf.register_opts(conf)
