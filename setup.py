import glob

import setuptools

# memagg._native: the C page sampler (native/src).  pbr still drives the
# package metadata from setup.cfg.
native = setuptools.Extension(
    'memagg._native',
    sources=sorted(glob.glob('native/src/*.c')),
    depends=sorted(glob.glob('native/src/*.h')),
    extra_compile_args=['-std=gnu11', '-Wall', '-Wextra', '-Werror'],
)

setuptools.setup(setup_requires=['pbr>=6.0.0'], pbr=True,
                 ext_modules=[native])
