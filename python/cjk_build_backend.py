"""The PEP 517/660 build backend: setuptools' own hooks, unchanged.

Why an in-tree module at all: pyproject.toml names the setuptools commands in
python/cjk_build.py (``[tool.setuptools] cmdclass``), and ``backend-path``,
which puts python/ on ``sys.path`` for the build, must by PEP 517 hold the
backend itself.  Nothing here changes how setuptools builds.
"""
from setuptools.build_meta import *  # noqa: F401,F403 - the public hooks
from setuptools.build_meta import __all__  # noqa: F401
