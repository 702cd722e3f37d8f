"""``doctor``: what this host can do, and how an archive's indexes are doing."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

from .constants import MMAP_SIZE


def host_report() -> list[tuple[str, str, bool]]:
    """(item, finding, ok) rows about this Python, its SQLite hosts and the extension."""
    import apsw

    from . import _native
    from .errors import ExtensionError
    from .loader import load, loadable_path, shell_load

    rows = []
    rows.append(("APSW", f"{apsw.apsw_version()} with SQLite {apsw.sqlite_lib_version()}", True))
    conn = apsw.Connection(":memory:")
    try:
        fts5 = "ENABLE_FTS5" in {r[0] for r in conn.execute("PRAGMA compile_options")}
        rows.append(("FTS5 in APSW's SQLite", "yes" if fts5 else "no (SQLITE_ENABLE_FTS5 missing)", fts5))
        try:
            load(conn)
            rows.append(("extension loads into APSW", "yes", True))
        except ExtensionError as exc:
            rows.append(("extension loads into APSW", f"no: {exc}", False))
    finally:
        conn.close()
    rows.append(("compiled module", _native.module_path() or _native.missing_reason(),
                 _native.available()))
    try:
        path = loadable_path()
        rows.append(("plain library (for .load)", path, True))
    except ExtensionError as exc:
        path = None
        rows.append(("plain library (for .load)", str(exc), False))
    std = sqlite3.connect(":memory:")
    try:
        if hasattr(std, "enable_load_extension"):
            try:
                load(std)
                finding = f"SQLite {sqlite3.sqlite_version}: loads"
                ok = True
            except ExtensionError as exc:
                finding, ok = f"SQLite {sqlite3.sqlite_version}: {exc}", False
        else:
            finding = (f"SQLite {sqlite3.sqlite_version}: built without extension loading "
                       "(use APSW; the Archive does)")
            ok = True  # expected on many Pythons; not a fault of this install
        rows.append(("stdlib sqlite3", finding, ok))
    finally:
        std.close()
    shell = shutil.which("sqlite3")
    if shell and path:
        try:
            out = subprocess.run(
                [shell, ":memory:", "-cmd", shell_load(path),
                 "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='cjk_unicode61'); SELECT sqlite_version();"],
                capture_output=True, text=True, timeout=20)
            ok = out.returncode == 0
            finding = f"SQLite {out.stdout.strip()}: loads" if ok else f"fails: {out.stderr.strip()}"
        except (OSError, subprocess.SubprocessError) as exc:
            ok, finding = False, str(exc)
        rows.append((f"sqlite3 shell ({shell})", finding, ok))
    else:
        rows.append(("sqlite3 shell", "not installed" if not shell else "no library to load", True))
    return rows


def archive_report(path: str, *, integrity: bool = False, mmap_size: int = MMAP_SIZE) -> list[tuple[str, str, bool]]:
    """Rows about the archive at ``path``; a file that cannot be opened as one is a BAD row naming it.

    The file is never created or converted; it is read read-only when it
    cannot be written (then FTS5's integrity-check, a write statement, is
    skipped).
    """
    import apsw

    from .archive import Archive
    from .errors import CjkTokenizerError
    from .indexing import scratch_files

    if not os.path.exists(path):
        return [("archive", f"{path}: no such file", False)]
    try:
        ar = Archive(path, readonly=None, create=False, auto_catch_up=0, mmap_size=mmap_size)
    except (CjkTokenizerError, OSError, apsw.Error) as exc:
        text = str(exc)
        return [("archive", text if path in text else f"{path}: {text}", False)]
    rows = []
    with ar:
        mode = " (read-only)" if ar.readonly else ""
        rows.append(("archive", f"{path}{mode}: {ar.count_sessions():,} sessions, "
                                f"{ar.count_messages():,} messages", True))
        rows.append(("extension here", "loaded" if ar.extension_loaded else f"not loaded: {ar.extension_error}",
                     ar.extension_loaded))
        mapped = ar.conn.execute("PRAGMA mmap_size").fetchone()[0]
        rows.append(("memory map", f"up to {mapped:,} bytes of the file read through it (--mmap-size 0 turns it "
                                   "off)" if mapped else "off: every read is a system call", True))
        sizes = ar.indexes.sizes()
        for route, st in ar.indexes.status().items():
            ok = st["served"]
            detail = f"{st['status']}, {'served' if st['served'] else 'NOT served'}"
            if st["behind"] or st["backlog"]:
                detail += f", {st['behind']:,} rows behind ({st['backlog']:,} changes queued)"
                detail += "; run `cjk-tokenizer rebuild DB` on a host with the extension" \
                    if not st["tokenizer_available"] else "; run `cjk-tokenizer rebuild DB` to catch up"
            if route in sizes:
                detail += f", {sizes[route] / 2**20:,.1f} MiB"
            rows.append((f"index {route}", detail, ok))
        scratch = scratch_files(path)
        if scratch:
            size = 0
            for f in scratch:
                try:
                    size += os.path.getsize(f)
                except OSError:  # the import that made it just removed it
                    pass
            rows.append(("scratch files", f"{len(scratch)} beside the archive ({size / 2**20:,.1f} MiB), left by an "
                         f"import's index build ({os.path.basename(scratch[0])}…): an import running now, or one "
                         "that was killed; delete them when no import runs", False))
        if integrity:
            for route, verdict in ar.indexes.integrity_check().items():
                rows.append((f"integrity {route}", verdict, verdict == "ok" or verdict.startswith("skipped")))
    return rows
