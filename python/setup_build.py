"""Build the compiled artifacts in place for development, from the checkout root:

    python python/setup_build.py -q build_ext --inplace

Everything comes from pyproject.toml and the commands it names in
python/cjk_build.py, exactly as ``pip install`` and ``python -m build`` use
them.  Set ``CJK_SANITIZE=1`` to build with AddressSanitizer and UBSan.
"""
from setuptools import setup

setup()
