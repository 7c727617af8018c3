"""Options read from a real config file, as a service would read them."""
from oslo_config import cfg


def group_from_file(tmp_path, conf_module, text):
    """A fresh ConfigOpts with ``conf_module``'s options registered, parsed
    from a memagg.conf holding ``[group]`` and ``text``."""
    path = tmp_path / 'memagg.conf'
    path.write_text('[%s]\n%s\n' % (conf_module.GROUP.name, text))
    conf = cfg.ConfigOpts()
    conf_module.register_opts(conf)
    conf(['--config-file', str(path)], project='memagg',
         default_config_files=[])
    return conf
