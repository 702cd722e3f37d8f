"""setup() for cjk_tokenizer: two artifacts from the same csrc/ sources.

1. ``cjk_tokenizer/_cjk_unicode61.*.so`` — the cffi module.  Python imports it
   for the CJK classification and width folding, and it is also a loadable
   SQLite extension (entry point ``sqlite3_cjkunicode_init``).
2. ``cjk_tokenizer/libcjk_unicode61.so`` — the same extension with no Python
   symbols, for the ``sqlite3`` shell and any other host.

Neither links libsqlite3: the extension reaches SQLite only through the
routines the host passes to the entry point.

Set ``CJK_SANITIZE=1`` to build both with AddressSanitizer and UBSan.
"""
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cjk_sources import C_SOURCES, compile_args, link_args  # noqa: E402

PLAIN_LIB = "cjk_tokenizer.libcjk_unicode61"


def _plain_lib_filename():
    if sys.platform == "darwin":
        return "libcjk_unicode61.dylib"
    if sys.platform == "win32":
        return "cjk_unicode61.dll"
    return "libcjk_unicode61.so"


class BuildExt(build_ext):
    """Names the plain library as SQLite hosts expect, without Python's ABI tag."""

    def get_ext_filename(self, fullname):
        # Called with the dotted name and with its last part alone; answer in kind.
        parts = fullname.split(".")
        if parts[-1] == PLAIN_LIB.split(".")[-1]:
            return os.path.join(*parts[:-1], _plain_lib_filename())
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        if ext.name == PLAIN_LIB:
            return ["sqlite3_cjkunicode_init"]
        return super().get_export_symbols(ext)


setup(
    ext_modules=[
        Extension(
            PLAIN_LIB,
            sources=C_SOURCES,
            include_dirs=["csrc"],
            extra_compile_args=compile_args(),
            extra_link_args=link_args(),
        )
    ],
    cffi_modules=["python/build_cffi.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt},
)
