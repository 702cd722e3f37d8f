"""What the plugin tests need from the Python running them.

The plugins are found through entry points, so they need this package
installed (a wheel, or ``pip install -e``) next to the tool.  CI's ``plugins``
stage runs these tests under Debian's python3 (whose sqlite3 loads
extensions) with the wheel installed; the main stage runs them under a
Python that may not load extensions, where only the one-line notice applies.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sqlite3
import subprocess
import sys

import pytest

CAN_LOAD = hasattr(sqlite3.Connection, "enable_load_extension")
NOTICE = "cjk_tokenizer: {tool} cannot use the cjk_unicode61 tokenizer here"


def _skip_or_fail(reason: str, env: str) -> None:
    if os.environ.get(env):
        pytest.fail(f"{reason} (and {env} is set)")
    pytest.skip(reason)


def require_plugin(tool_module: str, group: str) -> None:
    """Skip (fail in CI) unless ``tool_module`` is importable and our entry point is installed."""
    if importlib.util.find_spec(tool_module) is None:
        _skip_or_fail(f"{tool_module} is not installed (pip install -e '.[test]')", "CJK_REQUIRE_ALL_HOSTS")
    if os.environ.get("CJK_EXPECT_INSTALLED"):  # CI's plugins stage: not the checkout's source tree
        import cjk_tokenizer

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        assert not os.path.abspath(cjk_tokenizer.__file__).startswith(root + os.sep), cjk_tokenizer.__file__
    ours = [e for e in importlib.metadata.entry_points(group=group) if e.value.startswith("cjk_tokenizer.")]
    if not ours:
        _skip_or_fail(f"cjk-tokenizer is not installed in this Python, so its {group} entry point is missing",
                      "CJK_REQUIRE_ALL_HOSTS")


def require_loading() -> None:
    if not CAN_LOAD:
        _skip_or_fail("this Python's sqlite3 is built without extension loading", "CJK_REQUIRE_STDLIB_LOAD")


def run_tool(script: str, args, cwd) -> subprocess.CompletedProcess:
    """Run a console script installed next to this Python (``sqlite-utils``, ``datasette``)."""
    exe = os.path.join(os.path.dirname(sys.executable), script)
    if not os.path.exists(exe):
        _skip_or_fail(f"{script} is not installed next to {sys.executable}", "CJK_REQUIRE_ALL_HOSTS")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def notice_lines(stderr: str, tool: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(NOTICE.format(tool=tool))]


def names_this_python(line: str) -> bool:
    """Does the notice name the interpreter running the tool, this one?  The
    tool's script may start it through another link to the same file (pip
    writes the path it was run as: bin/python, bin/python3 ...)."""
    m = re.search(r"sqlite3 module \((.+?), Python ", line)
    return m is not None and os.path.realpath(m.group(1)) == os.path.realpath(sys.executable)
