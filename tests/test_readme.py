"""The README's examples run and print what their comments say."""
import contextlib
import io
import os
import subprocess

import cjk_tokenizer

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def _block(lang: str, starting: str) -> str:
    text = open(README, encoding="utf-8").read()
    start = text.index(f"```{lang}\n{starting}") + len(f"```{lang}\n")
    return text[start:text.index("```", start)]


def test_python_example_prints_its_comments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_block("python", "import apsw, cjk_tokenizer"), {})
    assert out.getvalue().splitlines() == ["[(1,)]", "['reasoning'] 用户住在合肥。 cjk"]


def test_shell_example_answers_as_commented(tmp_path, sqlite3_shell):
    sql = _block("sql", "CREATE VIRTUAL TABLE")
    proc = subprocess.run([sqlite3_shell, str(tmp_path / "a.db"), "-cmd", f".load {cjk_tokenizer.loadable_path()}"],
                          input=sql, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["1", "2", "2"]
    assert lines[3] == "東京の[天気]"
    assert lines[4].startswith('{"matched_in":["body"]') and '"snippet":"大别山**项目**管理系统"' in lines[4]
    assert lines[5:] == ["1"]  # cjk_rank orders the matches


def test_the_shell_command_runs_as_written(tmp_path, sqlite3_shell):
    import os
    import sys

    command = _block("bash", "sqlite3 -cmd").split("#")[0].strip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # a script, not a link: a venv's python linked elsewhere no longer finds its venv
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.path.dirname(sqlite3_shell)}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-c", command], input="SELECT count(*) > 0 FROM cjk_version;", cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert (proc.returncode, proc.stdout.strip()) == (0, "1"), proc.stderr
