"""PEP 517/660 build backend: setuptools' own, running python/setup_build.py.

The card keeps the top level to pyproject.toml and the project folders, so the
``setup()`` call that cffi needs (its ``cffi_modules`` keyword has no
pyproject.toml spelling) lives here in python/ instead of a top-level setup.py.
"""
import os

from setuptools import build_meta as _build_meta

# run_setup() is how setuptools' backend executes a setup script; it is not
# public API, so pyproject.toml caps setuptools at a range known to work.
if not hasattr(getattr(_build_meta, "_BuildMetaBackend", None), "run_setup"):
    raise ImportError("this setuptools has no _BuildMetaBackend.run_setup; "
                      "cjk_tokenizer's build needs setuptools>=77,<85 (see pyproject.toml)")

_SETUP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_build.py")


class _Backend(_build_meta._BuildMetaBackend):
    def run_setup(self, setup_script="setup.py"):
        super().run_setup(_SETUP_SCRIPT)


_BACKEND = _Backend()
get_requires_for_build_wheel = _BACKEND.get_requires_for_build_wheel
get_requires_for_build_sdist = _BACKEND.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _BACKEND.prepare_metadata_for_build_wheel
build_wheel = _BACKEND.build_wheel
build_sdist = _BACKEND.build_sdist
get_requires_for_build_editable = _BACKEND.get_requires_for_build_editable
prepare_metadata_for_build_editable = _BACKEND.prepare_metadata_for_build_editable
build_editable = _BACKEND.build_editable
