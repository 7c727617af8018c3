"""Options of the [scheduler] group: memagg-scheduler, the global manager."""
from oslo_config import cfg

GROUP = cfg.OptGroup('scheduler', title='memagg-scheduler options')

opts = [
    cfg.StrOpt('topic', default='memagg-scheduler',
               help='RPC topic memagg-scheduler listens on.'),
    cfg.IntOpt('purge_interval', default=3600, min=60,
               help='Seconds between two purges of WSS and host samples '
                    'older than [wss] sample_retention_hours.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
