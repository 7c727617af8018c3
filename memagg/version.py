"""The installed memagg version, from pbr."""
import pbr.version

version_info = pbr.version.VersionInfo('memagg')
