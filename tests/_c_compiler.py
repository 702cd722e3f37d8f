"""The C compiler the tests that build small C programs use, or a skip (a failure under CJK_REQUIRE_ALL_HOSTS);
and the build-and-run those tests share."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

CSRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
        pytest.fail(f"{reason} (and CJK_REQUIRE_ALL_HOSTS is set)")
    pytest.skip(reason)


def compiler(purpose: str) -> str:
    """$CC, else cc, gcc or clang; ``purpose`` names what it builds, for the skip message."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        skip_or_fail(f"no C compiler to build {purpose} with")
    return cc


def check_program(tmp_path, name: str, purpose: str, program: str, csrc_files, *args: str) -> str:
    """Compile ``program`` with csrc's ``csrc_files`` (warnings are errors), run it with ``args``, and
    return its output; a failed build or a non-zero exit fails the test."""
    cc = compiler(purpose)
    src, exe = tmp_path / f"{name}.c", tmp_path / name
    src.write_text(program, encoding="utf-8")
    sources = [os.path.join(CSRC, f) for f in csrc_files]
    r = subprocess.run([cc, "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{CSRC}", str(src), *sources,
                        "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{purpose} does not compile:\n{r.stderr}"
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout
    return out.stdout
