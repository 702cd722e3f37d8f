"""Our own SQLite/FTS5 ABI declarations (csrc/cjk_host.h) against the real headers.

csrc/cjk_host.h stands in for sqlite3.h and sqlite3ext.h, so nothing but this
test notices a mirrored member at the wrong place: the extension would call the
wrong host routine or read the wrong field.  Two small C programs are compiled,
one including cjk_host.h and one including the real headers, and each prints:

- for every struct cjk_host.h lays out (all but CjkHost, our own), the offset of
  every member, and the struct's size when the two declare the same members;
- for every ``CJK_SLOT_x``, the index of member ``x`` of sqlite3_api_routines;
- the value of every ``SQLITE_*``/``FTS5_*`` constant cjk_host.h defines.

The outputs must agree line for line.  A header older than a mirrored struct
(Debian's SQLite 3.40 has no fts5_tokenizer_v2, and ends Fts5ExtensionApi and
fts5_api sooner) is checked for the members it has; our declaration must then
extend it, never differ from it.  The system headers (``/usr/include``, from
libsqlite3-dev) are always checked; a current amalgamation's headers are checked
in full when ``CJK_SQLITE_INCLUDE`` names their folder (the fuzz stage of
tests/run_all.sh unpacks one and sets it).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _c_compiler import compiler, skip_or_fail  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST_H = os.path.join(ROOT, "csrc", "cjk_host.h")
SYSTEM_INCLUDE = "/usr/include"
OUR_OWN = {"CjkHost"}  # structs cjk_host.h defines that mirror nothing
# Where each mirrored struct is declared by SQLite, and the first SQLite to have it.
REAL_FILE = {"sqlite3_api_routines": "sqlite3ext.h"}
INTRODUCED = {"fts5_tokenizer_v2": 3047000}


def _strip_comments(src):
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", src, flags=re.S)


def _structs(src):
    """{struct tag: [member names in order]} for every struct body in a C header."""
    found = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{(.*?)\}", _strip_comments(src), flags=re.S):
        members = []
        for decl in m.group(2).split(";"):
            decl = " ".join(decl.split())
            if not decl or decl.startswith("#"):
                continue
            name = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl) or re.search(r"(\w+)\s*(\[[^\]]*\])?$", decl)
            members.append(name.group(1))
        found[m.group(1)] = members
    return found


def _ours():
    src = open(HOST_H, encoding="utf-8").read()
    structs = {k: v for k, v in _structs(src).items() if k not in OUR_OWN}
    slots = dict(re.findall(r"^#define CJK_SLOT_(\w+) (\d+)", src, flags=re.M))
    constants = re.findall(r"^#define ((?:SQLITE|FTS5)_\w+) ", src, flags=re.M)
    return structs, slots, constants


def _real(include):
    src = {f: open(os.path.join(include, f), encoding="utf-8").read() for f in ("sqlite3.h", "sqlite3ext.h")}
    version = int(re.search(r"#define SQLITE_VERSION_NUMBER\s+(\d+)", src["sqlite3.h"]).group(1))
    structs = _structs(src["sqlite3.h"])
    structs.update({k: v for k, v in _structs(src["sqlite3ext.h"]).items() if k in REAL_FILE})
    return version, structs


def _plan(include):
    """What both programs print: [(struct, [members], same_size)], slots, constants."""
    ours, slots, constants = _ours()
    version, real = _real(include)
    assert set(ours) >= {"fts5_api", "fts5_tokenizer", "Fts5ExtensionApi", "sqlite3_module"}, sorted(ours)
    assert slots and constants
    plan, partial = [], []
    for tag, members in ours.items():
        if tag not in real:
            assert version < INTRODUCED.get(tag, 0), f"struct {tag} is not in the SQLite {version} headers"
            partial.append(tag)
            continue
        theirs = real[tag]
        common = min(len(members), len(theirs))
        assert members[:common] == theirs[:common], (
            f"struct {tag}: cjk_host.h declares {members}, the SQLite {version} header {theirs}")
        if len(members) > len(theirs):
            partial.append(tag)
        plan.append((tag, members[:common], len(members) == len(theirs)))
    missing = sorted(set(slots) - set(real["sqlite3_api_routines"]))
    assert not missing, f"sqlite3_api_routines has no member {missing}"
    return version, plan, slots, constants, partial


def _program(includes, plan, slots, constants, real):
    lines = [*includes, "#include <stddef.h>", "#include <stdio.h>", "int main(void) {"]
    for tag, members, same_size in plan:
        for m in members:
            lines.append(f'  printf("{tag}.{m} %zu\\n", offsetof(struct {tag}, {m}));')
        if same_size:
            lines.append(f'  printf("sizeof {tag} %zu\\n", sizeof(struct {tag}));')
    for name, index in sorted(slots.items()):
        value = f"offsetof(struct sqlite3_api_routines, {name}) / sizeof(void *)" if real else f"(size_t)CJK_SLOT_{name}"
        lines.append(f'  printf("slot {name} %zu\\n", (size_t){value});')
    for name in constants:
        lines.append(f'  printf("{name} %lld\\n", (long long)(size_t){name});')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def _run(tmp_path, name, source, include_dirs):
    cc = compiler("the ABI check")
    c_file, exe = tmp_path / f"{name}.c", tmp_path / name
    c_file.write_text(source, encoding="utf-8")
    flags = [f"-I{d}" for d in include_dirs]
    r = subprocess.run([cc, "-std=c99", "-Wall", "-Werror", *flags, str(c_file), "-o", str(exe)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{name}.c does not compile:\n{r.stderr}\n{source}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout
    return out.splitlines()


def _check(tmp_path, include):
    version, plan, slots, constants, partial = _plan(include)
    ours = _run(tmp_path, "ours", _program(['#include "cjk_host.h"'], plan, slots, constants, False),
                [os.path.join(ROOT, "csrc")])
    theirs = _run(tmp_path, "theirs", _program(["#include <sqlite3.h>", "#include <sqlite3ext.h>"],
                                               plan, slots, constants, True), [include])
    expected = sum(len(members) + same_size for _, members, same_size in plan) + len(slots) + len(constants)
    assert len(ours) == len(theirs) == expected
    differ = [f"{a}  (SQLite {version}: {b})" for a, b in zip(ours, theirs) if a != b]
    assert not differ, "cjk_host.h disagrees with the real headers:\n" + "\n".join(differ)
    return version, partial


def test_host_declarations_match_the_system_sqlite_headers(tmp_path):
    if not all(os.path.exists(os.path.join(SYSTEM_INCLUDE, f)) for f in ("sqlite3.h", "sqlite3ext.h")):
        skip_or_fail("sqlite3.h/sqlite3ext.h are not installed (apt-get install libsqlite3-dev)")
    _check(tmp_path, SYSTEM_INCLUDE)


def test_host_declarations_match_a_current_sqlite_in_full(tmp_path):
    include = os.environ.get("CJK_SQLITE_INCLUDE")
    if not include:
        pytest.skip("CJK_SQLITE_INCLUDE names no folder with a SQLite >= 3.47 sqlite3.h and sqlite3ext.h "
                    "(the fuzz stage of tests/run_all.sh sets it to the amalgamation it fetches)")
    version, partial = _check(tmp_path, include)
    assert version >= 3047000, f"CJK_SQLITE_INCLUDE holds SQLite {version}; the fts5 v3 structs need 3.47+"
    assert not partial, f"the SQLite {version} headers leave members of {partial} unchecked"


def test_struct_parser_reads_member_names():
    # The check above is only as good as the member lists it is handed.
    src = """struct s {
      int iVersion;                 /* a; b */
      void (*xDelete)(Fts5Tokenizer*, int (*)(void *));
      const unsigned char *a;
      char aBuf[8];
    };"""
    assert _structs(src) == {"s": ["iVersion", "xDelete", "a", "aBuf"]}


@pytest.mark.parametrize("level", ["-O0", "-O2", "-O3", "-Os"])
def test_every_c_source_compiles_without_a_warning(tmp_path, level):
    # -O3 saw instance fields that are unset past the last instance (never read there) as
    # maybe used uninitialized: a build of csrc/ by hand at -O3 warned
    import glob
    import shutil

    from _c_compiler import CSRC, compiler

    compilers = {compiler("csrc"), *filter(None, (shutil.which("gcc"), shutil.which("clang")))}
    failures = []
    for cc in sorted(compilers):
        for src in sorted(glob.glob(os.path.join(CSRC, "*.c"))):
            r = subprocess.run([cc, "-std=c99", level, "-Wall", "-Wextra", "-Werror", f"-I{CSRC}",
                                "-DCJK_VERSION=\"0\"", "-c", src, "-o", str(tmp_path / "x.o")],
                               capture_output=True, text=True, timeout=300)
            if r.returncode:
                failures.append(f"{os.path.basename(cc)} {level} {os.path.basename(src)}:\n{r.stderr[-1500:]}")
    assert not failures, "\n".join(failures)
