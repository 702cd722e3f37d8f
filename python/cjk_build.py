"""The setuptools commands pyproject.toml names (``[tool.setuptools] cmdclass``).

They build two artifacts from the C sources pyproject.toml lists for
``cjk_tokenizer.libcjk_unicode61``:

1. ``cjk_tokenizer/libcjk_unicode61.so`` — the loadable SQLite extension (entry
   point ``sqlite3_cjkunicode_init``) for every host: ``cjk_tokenizer.load()``,
   the ``sqlite3`` shell, any other program.  It exports the entry point and
   the helpers python/build_cffi.py declares (``CJK_API`` in csrc/cjk_api.h);
   everything else is hidden.
2. ``cjk_tokenizer/_cjk_unicode61.abi3.so`` — the cffi module
   (python/build_cffi.py): only cffi's generated wrapper, linked to the plain
   library (``DT_NEEDED libcjk_unicode61.so``, ``RUNPATH $ORIGIN``; on macOS
   ``@rpath`` and ``@loader_path``), so the C code ships once.  Importing it
   maps the plain library for the life of the process, which is what lets
   ``load()`` hand SQLite that same file: a tokenizer object that outlives its
   connection never runs unmapped code.  On Windows the module still compiles
   the sources itself (``load()`` then loads the module's own file).

Neither links libsqlite3: the extension reaches SQLite only through the
routines the host passes to the entry point.  Both use only CPython's stable
ABI (the cffi module) or none at all (the plain library), so one wheel per
platform serves every CPython from 3.9 on.

Set ``CJK_SANITIZE=1`` to build both with AddressSanitizer and UBSan
(unstripped, with debug info); otherwise the Linux objects are stripped.
"""
import os
import sys
import sysconfig

from setuptools import Extension
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

PLAIN_LIB = "cjk_tokenizer.libcjk_unicode61"
CFFI_MODULE = "cjk_tokenizer._cjk_unicode61"
PLAIN_LIB_LINK_NAME = "cjk_unicode61"  # -lcjk_unicode61
LIMITED_API = "cp39"  # the oldest CPython the project supports (requires-python)


def sanitize():
    return os.environ.get("CJK_SANITIZE", "") not in ("", "0")


def compile_args():
    if sys.platform == "win32":
        return []
    args = ["-std=c99", "-Wall", "-Wextra", "-fvisibility=hidden"]
    if sanitize():
        args += ["-O1", "-g", "-fno-omit-frame-pointer",
                 "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    else:
        # -O2, not -Os: the snippets of a newest-first page (cjk_match) take
        # a few percent less time, for a library some 13 KB larger.  No
        # unwind tables: no C++ exception ever crosses this code.
        args += ["-O2", "-fno-asynchronous-unwind-tables"]
    return args


def link_args():
    if sanitize():
        return ["-fsanitize=address,undefined"]
    # Python's own CFLAGS carry -g: strip what ships (debug info and the symbol table).
    return ["-s"] if sys.platform.startswith("linux") else []


def links_plain_library():
    """Whether the cffi module links to the plain library (else it compiles the sources itself)."""
    return sys.platform != "win32"


def limited_api_available():
    """Debug and free-threaded CPython builds have no stable ABI to build for."""
    return not hasattr(sys, "gettotalrefcount") and not sysconfig.get_config_var("Py_GIL_DISABLED")


def _plain_lib_filename():
    if sys.platform == "darwin":
        return "libcjk_unicode61.dylib"
    if sys.platform == "win32":
        return "cjk_unicode61.dll"
    return "libcjk_unicode61.so"


def _is_rpath_flag(arg):
    return arg.startswith(("-Wl,-rpath", "-Wl,--rpath", "-Wl,-R", "-Wl,--enable-new-dtags,-rpath"))


def _without_rpaths(args):
    """``args`` less every rpath: ``-Wl,-rpath,<dir>``, and the two-argument form
    ``-Wl,-rpath -Wl,<dir>`` (libtool's) whole, whose folder alone would reach the
    linker as an input file."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif _is_rpath_flag(arg):
            skip = arg in ("-Wl,-rpath", "-Wl,--rpath", "-Wl,-R")
        else:
            out.append(arg)
    return out


class BuildExt(build_ext):
    """Adds the cffi module next to the plain library, with the same sources and flags.

    Both get the flags above, the project's version as ``CJK_VERSION`` (the
    string ``SELECT version FROM cjk_version`` answers) and the stable ABI.
    """

    def finalize_options(self):
        extensions = self.distribution.ext_modules or []
        plain = next((e for e in extensions if e.name == PLAIN_LIB), None)
        if plain is None:
            raise RuntimeError(f"pyproject.toml declares no extension {PLAIN_LIB}")
        if not any(e.name == CFFI_MODULE for e in extensions):
            # Sources are completed in build_extension: the cffi wrapper is
            # generated at build time and must not end up in the sdist.
            extensions.append(Extension(CFFI_MODULE, sources=list(plain.sources),
                                        include_dirs=list(plain.include_dirs), depends=list(plain.depends)))
        super().finalize_options()
        version = self.distribution.get_version()
        for ext in self.extensions:
            ext.define_macros = [m for m in ext.define_macros if m[0] != "CJK_VERSION"]
            ext.define_macros.append(("CJK_VERSION", f'"{version}"'))
            ext.extra_compile_args = compile_args()
            ext.extra_link_args = link_args()
            ext.py_limited_api = limited_api_available()
        # The cffi module links to the plain library: build that first, one at a time.
        self.extensions.sort(key=lambda e: e.name != PLAIN_LIB)
        self.parallel = None

    def build_extensions(self):
        # A build Python linked against its own shared libpython (pyenv's, say)
        # puts "-Wl,-rpath,<its lib folder>" into every link: a folder of the
        # build machine that would ship in both objects' RUNPATH, searched
        # before the cffi module's $ORIGIN.  Neither object needs libpython.
        if sys.platform.startswith("linux"):
            self.compiler.linker_so = _without_rpaths(self.compiler.linker_so)
        super().build_extensions()

    def _link_to_plain_library(self, ext):
        """Make ``ext`` (the cffi module) use the plain library's code instead of its own copy."""
        ext.sources = []
        ext.libraries = [PLAIN_LIB_LINK_NAME]
        ext.library_dirs = [os.path.dirname(self.get_ext_fullpath(PLAIN_LIB))]
        if sys.platform == "darwin":
            ext.extra_link_args = [*ext.extra_link_args, "-Wl,-rpath,@loader_path"]
        else:  # RUNPATH (not the older RPATH, which LD_LIBRARY_PATH cannot override)
            ext.runtime_library_dirs = ["$ORIGIN"]
            # The wrapper calls nothing in libc itself, so an --as-needed
            # toolchain would leave libc.so.6 out of its DT_NEEDED: auditwheel
            # reads an extension module's libc from there and refuses the wheel.
            ext.extra_link_args = [*ext.extra_link_args, "-Wl,--enable-new-dtags", "-Wl,--no-as-needed"]

    def build_extension(self, ext):
        if ext.name == PLAIN_LIB and links_plain_library():
            # The name the cffi module records as its dependency.
            name = _plain_lib_filename()
            flag = f"-Wl,-install_name,@rpath/{name}" if sys.platform == "darwin" else f"-Wl,-soname,{name}"
            if flag not in ext.extra_link_args:
                ext.extra_link_args = [*ext.extra_link_args, flag]
        if ext.name == CFFI_MODULE:
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            try:
                from build_cffi import ffibuilder
            finally:
                sys.path.pop(0)
            if links_plain_library():
                self._link_to_plain_library(ext)
            wrapper = ffibuilder.distutils_extension(tmpdir=self.build_temp, verbose=False).sources[0]
            if wrapper not in ext.sources:
                ext.sources = [wrapper, *ext.sources]
        super().build_extension(ext)

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


class BdistWheel(bdist_wheel):
    """Tags the wheel cp39-abi3: one wheel per platform for every CPython >= 3.9."""

    def finalize_options(self):
        if not self.py_limited_api and limited_api_available():
            self.py_limited_api = LIMITED_API
        super().finalize_options()


class Sdist(sdist):
    """The sdist without tests/: setuptools adds its test*.py files, but they need the rest of
    the folder, bench/ and csrc/fuzz/ (megabytes of fuzz corpus), so an sdist holding them
    could not run them.  The tests run from a checkout (tests/run_all.sh)."""

    def make_release_tree(self, base_dir, files):
        # the list comes from egg_info's manifest, which adds them after any pruning here
        super().make_release_tree(base_dir, [f for f in files if not f.replace(os.sep, "/").startswith("tests/")])
