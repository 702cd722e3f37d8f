"""The C compiler the tests that build small C programs use, or a skip (a failure under CJK_REQUIRE_ALL_HOSTS)."""
from __future__ import annotations

import os
import shutil

import pytest


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
