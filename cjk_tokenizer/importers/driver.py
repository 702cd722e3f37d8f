"""The one import path every format goes through: plan, read, deduplicate, write.

* ``plan`` turns the paths a caller names into sources and their formats
  before anything is written: a missing path, a folder with nothing to import
  or a file of unknown format is an :class:`ImportFileError` naming it, and
  no archive file is created for it (the CLI plans before opening).
* ``run`` reads each source with its format's reader (base.py says what a
  reader yields), skips records the archive already holds from that source
  (``imported``: same key, same digest), reports records whose imported part
  changed, validates each new record whole (a bad one is counted and reported
  with its 1-based line, never half-imported) and writes batches of records,
  their sessions and their identities in one transaction each.
* ``sync`` plans again every root the archive recorded and runs it.

An import that at least doubles the archive (it adds as many messages as the
archive's highest message id before it) ends by merging each live index into
one segment (``Indexes.optimize``): a bulk import leaves an index as a stack of
segments, and every lookup pays one descent per segment.  The merge rewrites
the index, so it runs only when the import itself wrote at least as much as
the archive held: over an archive's life the merges write at most about twice
its final index, whatever the import sizes.  Small imports into a big archive leave the
merging to FTS5's automerge.  ``optimize=True`` / ``False`` overrides the rule.

An import of at least ``indexing.ASIDE_MIN_BYTES`` of sources into an archive
with an empty index (a new archive, say) builds that index on the second core
while it writes (``indexing.AsideBuild`` says how, and why the result is
exact): each committed batch is handed to the worker, which merges its index
while this thread merges the others.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from .. import records
from ..records import InputError
from ..archive import BULK_BATCH_CHARS
from ..errors import shown
from ..indexing import AsideBuild
from ..schema import IMPORT_DDL
from . import claude_code, codex, hermes, openai
from .base import ImportFileError, Record, SessionInfo, Skip, Source, peek_objects
from .base import digest as message_digest

FORMATS = {m.NAME: m for m in (openai, claude_code, codex, hermes)}
FORMAT_CHOICES = ("auto", *FORMATS)
_JSONL_DETECT_ORDER = (codex, claude_code, openai)
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
# Lines of problems shown in a report (the counts are always complete).
MAX_REPORTED = 20


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


@dataclass
class ImportReport:
    """What an import did: counts, and the problems in ``path:line: reason`` form.

    ``sessions``: ids of the sessions that gained messages or whose row was
    created or changed (title, source, start, metadata).
    """

    sources: int = 0
    messages: int = 0
    unchanged: int = 0
    sessions: set = field(default_factory=set, repr=False)  # one id per session: thousands
    skipped: Counter = field(default_factory=Counter)
    bad: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    optimized: dict = field(default_factory=dict)  # Indexes.optimize's result, when the import ended with it
    built_aside: str = ""  # the index built on the second core and copied in (indexing.AsideBuild), if any

    def summary(self, into: str = "") -> str:
        """The one-line summary the CLI prints (``into``: the archive's path, named after the sources)."""
        parts = [f"imported {_n(self.messages, 'message')} in {_n(len(self.sessions), 'session')} "
                 f"from {_n(self.sources, 'source')}" + (f" into {into}" if into else "")]
        if self.unchanged:
            parts.append(f"{_n(self.unchanged, 'record')} already imported")
        if self.skipped:
            parts.append("skipped: " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.skipped.items())))
        if self.changed:
            parts.append(f"{len(self.changed):,} changed since imported (not re-imported)")
        if self.missing:
            parts.append(f"{len(self.missing):,} sources gone")
        return "; ".join(parts)

    def counts(self) -> tuple:
        """(skipped, messages, unchanged, bad) so far, for ``skipped_all(since=...)``."""
        return sum(self.skipped.values()), self.messages, self.unchanged, len(self.bad)

    def skipped_all(self, since: tuple = (0, 0, 0, 0)) -> bool:
        """Records were read and every one was skipped: nothing imported, nothing known already
        (since ``counts()`` returned ``since``, when given)."""
        skipped, messages, unchanged, bad = (now - then for now, then in zip(self.counts(), since))
        return bool(skipped) and not (messages or unchanged or bad)

    def merged(self) -> str:
        """"merged the cjk, unicode61 indexes into one segment" when the import ended so, else ""."""
        merged = [r for r, what in self.optimized.items() if what == "merged"]
        if not merged:
            return ""
        return f"merged the {', '.join(merged)} {'index' if len(merged) == 1 else 'indexes'} into one segment"

    def problems(self) -> list:
        """One line per problem (at most MAX_REPORTED of each kind, then a count of the rest)."""
        out = []
        for items, what in ((self.bad, "bad records"), (self.changed, "changed records"),
                            (self.missing, "missing sources")):
            out += items[:MAX_REPORTED]
            if len(items) > MAX_REPORTED:
                out.append(f"... and {len(items) - MAX_REPORTED:,} more {what}")
        return out


# ---------------------------------------------------------------- planning

def detect_file(path: str):
    """The format of one file, or None (also for a pipe or device: reading one could wait forever)."""
    if not os.path.isfile(path):
        return None
    if hermes.is_sqlite(path):
        return hermes.NAME if hermes.detect_db(path) else None
    try:
        objs = peek_objects(path)
    except OSError:
        return None
    for module in _JSONL_DETECT_ORDER:
        if objs and module.detect(objs):
            return module.NAME
    return None


def _unreadable(path: str) -> str | None:
    """Why ``path`` cannot be read (its OS error), or None when it can."""
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _walk(folder: str):
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if (name.endswith(".jsonl") or name.endswith(_DB_SUFFIXES)) and os.path.isfile(path):
                yield path  # not a pipe or device named like a history


def _check_format(fmt: str) -> str:
    if fmt not in FORMAT_CHOICES:
        raise ImportFileError(f"unknown format {fmt!r}; one of: {', '.join(FORMAT_CHOICES)}")
    return fmt


def plan(paths, fmt: str = "auto", *, exclude=None) -> list:
    """``[(root, fmt, [Source, ...]), ...]`` for the named paths; raises before any write.

    ``exclude``: a real path never to read (the archive itself, when it sits
    in a folder being imported).
    """
    _check_format(fmt)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for given in paths:
        path = os.fspath(given)
        if path == "-":
            out.append(("-", fmt, [_stdin_source(fmt)]))
            continue
        if not os.path.exists(path):
            raise ImportFileError(f"{path}: no such file or directory")
        if exclude and os.path.realpath(path) in exclude:
            raise ImportFileError(f"{path}: is the archive being imported into")
        if os.path.isdir(path):
            sources = []
            for f in _walk(path):
                if exclude and os.path.realpath(f) in exclude:
                    continue
                why = _unreadable(f)
                if why is not None:
                    if f.endswith((".jsonl", ".db")):  # a history, by its name: the run reports it, goes on
                        src = Source(f, fmt if fmt != "auto" else "openai")
                        src.unreadable = why
                        sources.append(src)
                    continue
                if fmt == "auto":
                    found = detect_file(f)
                elif fmt == hermes.NAME:
                    found = fmt if hermes.detect_db(f) else None
                else:
                    found = fmt if f.endswith(".jsonl") else None
                if found:
                    sources.append(Source(f, found))
            if not sources:
                what = "importable" if fmt == "auto" else fmt
                raise ImportFileError(f"{path}: a folder with no {what} files in it")
            out.append((path, fmt, sources))
            continue
        if not os.path.isfile(path):
            raise ImportFileError(f"{path}: not a regular file (a pipe or a device); to read a stream, "
                                  "pipe it to `import DB -`")
        why = _unreadable(path)
        if why is not None:
            raise ImportFileError(f"{path}: cannot be read ({why})")
        found = detect_file(path) if fmt == "auto" else fmt
        if found is None:
            raise ImportFileError(f"{path}: cannot tell its format; give --format "
                                  f"({', '.join(FORMATS)})")
        if found == hermes.NAME and not hermes.is_sqlite(path):
            raise ImportFileError(f"{path}: not a SQLite file, so not a Hermes state.db")
        out.append((path, fmt, [Source(path, found)]))
    return out


def _remove_spool(path: str) -> None:
    """The spooled copy of stdin, and the files SQLite made beside it when detection opened it."""
    for name in (path, path + "-wal", path + "-shm", path + "-journal"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


_SPOOL_PREFIX = "cjk-import-"


def _sweep_spools() -> None:
    """Remove the spools of stdin imports whose process is gone (killed: nothing ran its
    cleanup).  A spool's name carries its process id."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{_SPOOL_PREFIX}*-*.jsonl")):
        pid = os.path.basename(path)[len(_SPOOL_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            _remove_spool(path)
        except OSError:  # alive, another user's: not ours to judge
            pass


def _stdin_source(fmt: str) -> Source:
    """Standard input, spooled to a temporary file so it can be detected and measured."""
    _sweep_spools()
    spool = tempfile.NamedTemporaryFile(prefix=f"{_SPOOL_PREFIX}{os.getpid()}-", suffix=".jsonl", delete=False)
    with spool:
        shutil.copyfileobj(sys.stdin.buffer, spool)
    found = detect_file(spool.name) if fmt == "auto" else fmt
    if found == hermes.NAME or (found is None and hermes.is_sqlite(spool.name)):
        _remove_spool(spool.name)
        raise ImportFileError("<stdin>: a Hermes state.db must be named by its path, not piped")
    if found is None:
        _remove_spool(spool.name)
        raise ImportFileError(f"<stdin>: cannot tell its format; give --format ({', '.join(FORMATS)})")
    src = Source("-", found)
    # Streams are told apart by their first line: piping the same (grown) history again is
    # incremental, piping a different one does not collide with it.  Two that share their
    # first line (a system prompt) are told apart line by line (_Run._record).
    with open(spool.name, "rb") as f:
        src.identity = "-:" + hashlib.blake2b(f.readline(), digest_size=8).hexdigest()
    src.read_path = spool.name
    src.size = os.path.getsize(spool.name)
    return src


# ---------------------------------------------------------------- running

def _ensure_tables(archive) -> None:
    def work():
        for ddl in IMPORT_DDL:
            archive.conn.execute(ddl)
    archive._write(work)


def _session_fields(info: SessionInfo) -> tuple:
    """A SessionInfo's values, validated as the archive stores them (InputError if not storable)."""
    meta = info.metadata
    records.metadata_(meta)  # storable, or InputError
    return (records.ident(info.id, "session id"), records.text(info.title, "title"),
            records.text(info.source, "source"), info.started_at, dict(meta) if isinstance(meta, dict) else meta)


def _merged_meta(old, new):
    """Session metadata ``new`` over ``old``: dicts merge key by key; text or a list
    (what another tool stored, exported) replaces, and nothing given keeps ``old``."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **new}
    return old if new is None or new == {} else new


def _merge(pending: dict, info: tuple) -> None:
    sid, title, source, started, meta = info
    old = pending.get(sid)
    if old is None:
        pending[sid] = [title, source, started, meta]
        return
    for i, value in enumerate((title, source, started)):
        if value is not None:
            old[i] = value
    old[3] = _merged_meta(old[3], meta)


def _upsert_sessions(conn, pending: dict) -> set:
    """Create or update the pending sessions; returns the ids whose row was created or changed."""
    touched = set()
    for sid, (title, source, started, meta) in pending.items():
        row = conn.execute("SELECT title, source, started_at, metadata FROM sessions WHERE id = ?",
                           (sid,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO sessions(id, title, source, started_at, metadata) VALUES (?, ?, ?, ?, ?)",
                         (sid, title, source, started, records.metadata_(meta)))
            touched.add(sid)
            continue
        try:
            old_meta = json.loads(row[3]) if row[3] else {}
        except ValueError:
            old_meta = row[3]  # text another tool stored
        merged = _merged_meta(old_meta, meta)
        new = (title if title is not None else row[0], source if source is not None else row[1],
               started if started is not None else row[2], records.metadata_(merged))
        if new != tuple(row):
            conn.execute("UPDATE sessions SET title = ?, source = ?, started_at = ?, metadata = ? WHERE id = ?",
                         (*new, sid))
            touched.add(sid)
    return touched


def _where(src: Source, line) -> str:
    return f"{src.name}:{line}" if line is not None else src.name


class _Run:
    def __init__(self, archive, report: ImportReport, progress, batch_size: int, total: int, aside=None):
        self.ar, self.report, self.progress = archive, report, progress
        self.batch_size, self.total, self.aside = batch_size, total, aside
        self.before = 0  # bytes of finished sources, for progress
        self.bad_lines: set = set()  # of the source being read: a line is one bad record, however many parts fail

    def bad(self, src: Source, line, reason: str) -> None:
        if line is not None:
            if line in self.bad_lines:
                return
            self.bad_lines.add(line)
        self.report.skipped["bad"] += 1
        self.report.bad.append(f"{_where(src, line)}: {reason}")

    def source(self, src: Source) -> None:
        conn = self.ar.conn
        self.bad_lines = set()
        if getattr(src, "unreadable", None):
            self.bad(src, None, f"cannot be read ({src.unreadable}); the folder's other files are imported")
            return
        reader = FORMATS[src.fmt]

        def register():
            conn.execute("INSERT OR IGNORE INTO import_sources(format, path) VALUES (?, ?)", (src.fmt, src.identity))
            conn.execute("UPDATE import_sources SET imported_at = ? WHERE format = ? AND path = ?",
                         (time.time(), src.fmt, src.identity))
            return conn.execute("SELECT id FROM import_sources WHERE format = ? AND path = ?",
                                (src.fmt, src.identity)).fetchone()[0]

        source_id = self.ar._write(register)
        known = dict(conn.execute("SELECT key, digest FROM imported WHERE source_id = ?", (source_id,)))
        # records gone from a source that rewrites itself (Hermes), by digest: a new record
        # reading exactly as one of them is that record again, under a new key
        gone: dict = {}
        present = getattr(reader, "keys", None)
        if present is not None and known:
            now = present(src)
            for key, digest in known.items():
                if key not in now:
                    gone.setdefault(digest, []).append(key)
        aliases: list = []  # (new key, the gone key it stands for)
        pending: dict = {}
        batch: list = []
        size = [0, 0]  # rows, characters in batch
        records = [0]  # records read: a source without any (a wrong --format, say) writes no session

        def flush():
            if not records[0]:
                return

            def work():
                self.report.sessions.update(_upsert_sessions(conn, pending))
                # another import of this source may have stored some of these since
                # ``known`` was read: in this write transaction they are plain to see
                taken = {r[0] for r in conn.execute(
                    "SELECT key FROM imported WHERE source_id = ? AND key IN (SELECT value FROM json_each(?))",
                    (source_id, json.dumps([key for key, _, _ in batch], ensure_ascii=False)))}
                # and so may an import of another file holding them (a moved or copied
                # transcript) under keys that name a record wherever it lies (_imported_elsewhere)
                taken |= self._taken_elsewhere(src, source_id, [b for b in batch if b[0] not in taken])
                todo = [b for b in batch if b[0] not in taken]
                flat = [row for _, _, rows in todo for row in rows]
                ids = iter(())
                if flat:
                    top = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
                    self.ar._stage(flat)
                    ids = iter([r[0] for r in conn.execute("SELECT id FROM messages WHERE id > ? ORDER BY id",
                                                           (top,))])
                marks = []
                for key, digest, rows in todo:
                    first = None
                    for _ in rows:
                        got = next(ids)
                        first = got if first is None else first
                    marks.append((source_id, key, digest, first, len(rows)))
                conn.executemany("INSERT INTO imported(source_id, key, digest, first_id, count) "
                                 "VALUES (?, ?, ?, ?, ?)", marks)
                conn.executemany("INSERT OR IGNORE INTO imported(source_id, key, digest, first_id, count) "
                                 "SELECT source_id, ?, digest, first_id, count FROM imported "
                                 "WHERE source_id = ? AND key = ?",
                                 [(new, source_id, old) for new, old in aliases])
                return len(flat), len(taken), {row.session_id for row in flat}

            stored, taken, sessions = self.ar._write(work)  # work may run twice (see Archive._write)
            self.report.sessions.update(sessions)
            self.report.messages += stored
            self.report.unchanged += taken
            if self.aside is not None:
                self.aside.feed()
            pending.clear()
            batch.clear()
            aliases.clear()
            size[:] = [0, 0]

        for n, item in enumerate(reader.read(src)):
            if n % 256 == 0 and self.progress is not None:
                self.progress(self.before + src.done, self.total)
            if isinstance(item, Skip):
                if item.kind == "bad":
                    self.bad(src, item.line, str(item.reason))
                else:
                    self.report.skipped[item.kind] += 1
                continue
            if isinstance(item, SessionInfo):
                try:
                    _merge(pending, _session_fields(item))
                except InputError as exc:
                    self.bad(src, item.line, f"session {shown(item.id)}: {exc}")
                continue
            records[0] += 1
            self._record(src, item, known, batch, size, gone, aliases)
            if size[0] >= self.batch_size or size[1] >= BULK_BATCH_CHARS:
                flush()
        flush()
        self.before += src.size or 0
        self.report.sources += 1

    def _imported_elsewhere(self, src: Source, key: str, digest: str) -> str | None:
        """A digest ``key`` was imported with from a source of this format (``digest``
        if any was), for a format whose keys name a record wherever its file lies
        (else None).  Several files may hold a key (a session's rollouts)."""
        anywhere = getattr(FORMATS[src.fmt], "global_key", None)
        if anywhere is None or not anywhere(key):
            return None
        row = self.ar.conn.execute("SELECT i.digest FROM imported i JOIN import_sources s ON s.id = i.source_id "
                                   "WHERE i.key = ? AND s.format = ? ORDER BY i.digest = ? DESC LIMIT 1",
                                   (key, src.fmt, digest)).fetchone()
        return None if row is None else row[0]

    def _copied_into_another_session(self, src: Source, rec: Record, old: str) -> bool:
        """Does ``rec`` read as the record stored under its key, but for its session id?
        (Claude Code writes a resumed session to a new file, its history copied under the
        same uuids with the new session's id.)"""
        row = self.ar.conn.execute(
            "SELECT m.session_id FROM imported i JOIN import_sources s ON s.id = i.source_id "
            "JOIN messages m ON m.id = i.first_id WHERE i.key = ? AND s.format = ? AND i.digest = ? LIMIT 1",
            (rec.key, src.fmt, old)).fetchone()
        if row is None or any(m.get("session_id") == row[0] for m in rec.messages):
            return False
        return message_digest([dict(m, session_id=row[0]) for m in rec.messages]) == old

    def _taken_elsewhere(self, src: Source, source_id: int, batch: list) -> set:
        """Keys of ``batch`` (key, digest, rows) another file of this format has
        stored, as _record would have found them before the batch was made."""
        anywhere = getattr(FORMATS[src.fmt], "global_key", None)
        wanted = [(key, digest) for key, digest, _ in batch if anywhere is not None and anywhere(key)]
        if not wanted:
            return set()
        found: dict = {}  # key -> its digests (several files may hold a key)
        for key, digest in self.ar.conn.execute(
                "SELECT i.key, i.digest FROM imported i JOIN import_sources s ON s.id = i.source_id "
                "WHERE s.format = ? AND i.source_id != ? AND i.key IN (SELECT value FROM json_each(?))",
                (src.fmt, source_id, json.dumps([key for key, _ in wanted], ensure_ascii=False))):
            found.setdefault(key, set()).add(digest)
        positional = getattr(FORMATS[src.fmt], "POSITIONAL_KEYS", False)
        return {key for key, digest in wanted if key in found and (digest in found[key] or not positional)}

    def _record(self, src: Source, rec: Record, known: dict, batch: list, size: list, gone: dict,
                aliases: list) -> None:
        try:
            records.text(rec.key, "its id")  # a key is stored and looked up as text
        except InputError as exc:
            self.bad(src, rec.line, f"record {shown(rec.key)}: {exc}")
            return
        digest = message_digest(rec.messages)
        old = known.get(rec.key) or (known.get(rec.legacy) if rec.legacy else None)
        anywhere = getattr(FORMATS[src.fmt], "global_key", None)
        if (old is not None and old != digest and src.identity.startswith("-:") and len(rec.messages) == 1
                and not (anywhere and anywhere(rec.key))):
            # one message at a line number of a stream, reading otherwise: most likely another stream that
            # began with the same line (a system prompt), so it is stored.  (A record of several messages,
            # a session of the fine-tuning shape, is a session that changed: reported as before.)
            rec = replace(rec, key=f"{rec.key} {digest}", legacy=None)
            old = known.get(rec.key)
        if old is None and (gone.get(digest) or rec.same_as is not None):  # a record the source rewrote or copied
            aliases.append((rec.key, gone[digest].pop() if rec.same_as is None else rec.same_as))
            known[rec.key] = digest
            self.report.unchanged += 1
            return
        if old is None:
            old = self._imported_elsewhere(src, rec.key, digest)
            if old is not None and old != digest and getattr(FORMATS[src.fmt], "POSITIONAL_KEYS", False):
                old = None  # the key's place in another file holds other text: another record
            elif old is not None and old != digest and self._copied_into_another_session(src, rec, old):
                old = digest  # a resumed session's copy of its history: the message is stored already
        if old is not None:
            if old == digest:
                self.report.unchanged += 1
            else:
                self.report.changed.append(f"{_where(src, rec.line)}: record {rec.key!r} was imported before "
                                           "and now reads differently; the imported version is kept")
            return
        try:
            rows = [records.openai_row(m.get("session_id"), m) for m in rec.messages]
        except InputError as exc:
            # without a line (a database's rows) the record's key says which one
            self.bad(src, rec.line, str(exc) if rec.line is not None else f"record {shown(rec.key)}: {exc}")
            return
        known[rec.key] = digest
        batch.append((rec.key, digest, rows))
        for row in rows:  # the sessions a flush stores rows in count as imported into (flush)
            size[0] += 1
            size[1] += row.text_chars()


def _check_optimize(optimize) -> None:
    if optimize is not None and not isinstance(optimize, bool):
        raise ValueError(f"optimize must be True, False or None (merge after an import that doubles the archive), "
                         f"not {optimize!r}")


def run(archive, planned, *, progress=None, batch_size: int = 2000, report: ImportReport | None = None,
        optimize: bool | None = None, notice=None):
    """Import planned sources (see ``plan``) into ``archive``; returns an ImportReport.

    ``optimize``: None merges the indexes when the import at least doubled the
    archive (the module doc), True always, False never.  ``notice``: called
    with one line before the merge, which ``progress`` does not count (a big
    archive's takes minutes)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    _check_optimize(optimize)
    report = report or ImportReport()
    _ensure_tables(archive)
    # ids only grow, so the highest one is the archive's size in messages (a count(*) would read the table)
    before = archive.conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
    roots = [(os.path.realpath(root), fmt) for root, fmt, _ in planned if root != "-"]
    known_roots = set(archive.conn.execute("SELECT path, format FROM import_roots"))
    if roots:  # before the reading, so that an interrupted import is synced later
        archive._write(lambda: archive.conn.executemany(
            "INSERT OR IGNORE INTO import_roots(path, format, added_at) VALUES (?, ?, ?)",
            [(r, f, time.time()) for r, f in roots]))
    total = sum(src.size or 0 for _, _, sources in planned for src in sources)
    aside = None
    try:
        aside = AsideBuild.start(archive, total)
        job = _Run(archive, report, progress, batch_size, total, aside)
        for root, fmt, sources in planned:
            before_root = report.counts()
            for src in sources:
                job.source(src)
            key = (os.path.realpath(root), fmt)
            if fmt != "auto" and root != "-" and key not in known_roots and report.skipped_all(since=before_root):
                # a format named wrongly: nothing of the root is of use, so sync does not read it again
                archive._write(lambda: archive.conn.execute(
                    "DELETE FROM import_roots WHERE path = ? AND format = ?", key))
        if progress is not None:
            progress(total, total)
        merge = bool(optimize or (optimize is None and report.messages and report.messages >= before))
        if aside is not None:
            aside.close(merge)  # the worker finishes (and merges) its index while this thread merges the others
        if merge:
            if notice is not None:
                notice("merging the indexes into one segment" + ("" if optimize else " (the import at least "
                                                                         "doubled the archive)"))
            report.optimized = archive.indexes.optimize()
        if aside is not None:
            built = aside.finish()
            if merge:
                report.optimized[aside.route] = built
            report.built_aside = aside.route if aside.copied else ""
    except BaseException:
        if aside is not None:
            aside.abandon()
        raise
    finally:
        for _, _, sources in planned:
            for src in sources:
                if src.identity.startswith("-:") and src.read_path:
                    _remove_spool(src.read_path)
    return report


def import_source(archive, paths, format: str = "auto", *, progress=None, batch_size: int = 2000,
                  optimize: bool | None = None) -> ImportReport:
    """Import files, folders or ``"-"`` (stdin) into ``archive``; see the module doc."""
    _check_optimize(optimize)
    return run(archive, plan(paths, format, exclude=archive_files(archive.path)), progress=progress,
               batch_size=batch_size, optimize=optimize)


def archive_files(path) -> set:
    """The real paths of an archive file and its companions: never read as a source."""
    base = os.path.realpath(path)
    return {base, base + "-wal", base + "-shm", base + "-journal"}


def sync(archive, *, progress=None, batch_size: int = 2000, optimize: bool | None = None,
         notice=None) -> ImportReport:
    """Import again every path the archive was ever given (new files in a folder included)."""
    _check_optimize(optimize)
    report = ImportReport()
    if archive.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'import_roots'").fetchone() is None:
        return report
    planned = []
    for path, fmt in archive.conn.execute("SELECT path, format FROM import_roots ORDER BY added_at, path"):
        try:
            planned += plan([path], fmt, exclude=archive_files(archive.path))
        except ImportFileError as exc:
            report.missing.append(str(exc))
    return run(archive, planned, progress=progress, batch_size=batch_size, report=report, optimize=optimize,
               notice=notice)
