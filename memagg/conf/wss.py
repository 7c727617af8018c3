"""Options of the [wss] group: working-set samples."""
from oslo_config import cfg

GROUP = cfg.OptGroup('wss', title='Working-set sample options')

opts = [
    cfg.IntOpt('sample_retention_hours', default=168, min=1,
               help='WSS samples older than this are purged by '
                    'memagg-scheduler and by "memagg-manage db purge".'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
