"""Command line: ``python -m cjk_tokenizer <command>`` (also installed as ``cjk-tokenizer``).

Commands: path, tokenize, search, import, sync, export, explain, doctor, rebuild, mcp, demo.
Errors are one line on stderr and a non-zero exit (1: the operation failed,
2: bad command-line usage); long operations draw a progress bar on stderr.
Output cut short by the reader (``… | head``) ends the command quietly with
exit status 141, as SIGPIPE ends standard tools.  The read commands (search,
explain, doctor) never create a file or make one an archive, and read an archive they
cannot write (read-only file, folder or mount) read-only.  A query that
starts with ``-`` (an exclusion such as ``-部署``) is taken as the query, not
as an option.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import asdict

from .constants import DEFAULT_SORT, FTS_ROUTES, MMAP_SIZE, ROLES, ROUTES, SORTS, TOKENIZE_MODES
from .errors import CjkTokenizerError
from .timeutil import FORMATS_HELP


def _cmd_path(args) -> int:
    from .loader import loadable_path

    print(loadable_path())
    return 0


def _cmd_tokenize(args) -> int:
    from ._native import gap_token
    from .tokens import tokenize

    data = args.text.encode("utf-8", "surrogatepass")
    tokens = tokenize(args.text, mode=args.mode, args=args.arg or ())
    gap = gap_token()
    for token, start, end, colocated in tokens:
        shown = repr(gap)[1:-1] + " (gap)" if token == gap else token
        original = data[start:end].decode("utf-8", "replace")
        print(f"{'  +' if colocated else ''}{shown}\t{start}-{end}\t{original!r}")
    return 0


def _open_archive(path, *, must_exist=True, **kw):
    """The archive at ``path``; ``must_exist``: one that is already an archive (a missing
    or empty file is refused, never made one), as every command but import wants."""
    from .archive import Archive

    return Archive(path, create=not must_exist, **kw)


def _read_archive(path, **kw):
    """An existing archive for a read command: never created or converted, read-only if unwritable."""
    return _open_archive(path, readonly=None, auto_catch_up=0, **kw)


def _time_arg(value, option: str):
    from .timeutil import epoch_seconds

    return None if value is None else epoch_seconds(value, option)


def _cmd_search(args) -> int:
    after, before = _time_arg(args.after, "--after"), _time_arg(args.before, "--before")
    with _read_archive(args.db, mmap_size=args.mmap_size) as ar:
        hits = ar.search(args.query, include_reasoning=args.reasoning, roles=args.role or None,
                         session_id=args.session, after=after, before=before,
                         sort=args.sort, limit=args.limit, route=args.route, offset=args.offset,
                         cursor=args.cursor)
        if args.json:
            print(json.dumps([asdict(h) for h in hits], ensure_ascii=False, indent=1))
            if hits.next_cursor:
                print(f"next page: --cursor {hits.next_cursor}", file=sys.stderr)
            return 0
        if not hits:
            print("no matches", file=sys.stderr)
        for h in hits:
            where = ",".join(h.matched_in) or "?"
            said = " (thought)" if h.matched_in == ["reasoning"] else ""
            print(f"message {h.message_id} {h.session_id} {h.role} [{where}{said}] via {h.route}")
            print("    " + h.snippet.replace("\n", " "))
        if hits.next_cursor:
            print(f"next page: --cursor {hits.next_cursor}", file=sys.stderr)
    return 0


def _cmd_explain(args) -> int:
    with _read_archive(args.db, mmap_size=args.mmap_size) as ar:
        if not args.sql:
            print(json.dumps(ar.explain(args.query, include_reasoning=args.reasoning), ensure_ascii=False, indent=1))
            return 0
        out = ar.explain(args.query, include_reasoning=args.reasoning, sql=True)
    if out["sql_functions"]:  # a comment, so the whole output still pastes into the shell
        print(f"-- needs the Python functions {', '.join(out['sql_functions'])}: run it from Python "
              "(search.ensure_functions), not in the sqlite3 shell")
    if "walk_sql" in out:  # the search reads in stretches; one statement over every id finds the same rows
        print(f"-- the search walks {out['walk']}; this one statement reads every id instead, the same rows")
    for st in out.get("walk_sql", out["sql"]):
        print(st["literal"] + ";")
    return 0


def _print_import(report, db, fmt: str = "auto") -> int:
    for line in report.problems():
        print(f"cjk-tokenizer: {line}", file=sys.stderr)
    print(report.summary(into=db))
    if report.merged():
        print(report.merged())
    if fmt != "auto" and report.skipped_all():  # a format named wrongly reads as records of no use
        print(f"cjk-tokenizer: error: no record read is a {fmt} message; is the source in another format? "
              "Without --format each file's format is detected", file=sys.stderr)
        return 1
    return 1 if report.bad else 0


def _import_progress():
    from .progress import ProgressBar

    bar = ProgressBar("import")
    bar.last = (0, None)
    bar.finished = False

    def progress(done, total):
        bar.last = (done, total)
        bar.update(done, total, "bytes read")

    def notice(line):  # the bar is complete; what follows it takes a while
        finish()
        print(f"{line} …", file=sys.stderr, flush=True)

    def finish():
        if not bar.finished:
            bar.finished = True
            bar.finish(*bar.last, "bytes read")
    return progress, notice, finish


def _cmd_import(args) -> int:
    from .importers import driver

    if args.db == ":memory:":
        raise CjkTokenizerError(":memory: names an archive that is gone when the command ends; name a file")
    # Plan first: a bad path or an unknown format fails before the archive is created.
    planned = driver.plan(args.sources, args.format, exclude=driver.archive_files(args.db))
    progress, notice, finish = _import_progress()
    with _open_archive(args.db, must_exist=False, extension=not args.no_extension, mmap_size=args.mmap_size,
                       fold_variants=True if args.fold_variants else None) as ar:
        report = driver.run(ar, planned, progress=progress, batch_size=args.batch_size,
                            optimize=False if args.no_optimize else None, notice=notice)
        finish()
        return _print_import(report, args.db, args.format)


def _cmd_sync(args) -> int:
    from .importers import sync

    progress, notice, finish = _import_progress()
    with _open_archive(args.db, extension=not args.no_extension, mmap_size=args.mmap_size) as ar:
        report = sync(ar, progress=progress, batch_size=args.batch_size, optimize=False if args.no_optimize else None,
                      notice=notice)
        finish()
        return _print_import(report, args.db)


def _replaced_when_written(output: str, db: str, write) -> None:
    """Run ``write(stream)`` into ``output``, which is left as it was unless it all goes well.

    A regular file (or a new one) is written beside itself and renamed over it at the end,
    so an export that fails (no such session, a full disk) never leaves it cut short.  The
    archive itself, its companions and any other SQLite database are refused: export
    writes text.  Anything else (a device, a pipe, /dev/stdout), and a file in a folder
    that cannot take the file beside it, is written as it is."""
    from .importers.driver import archive_files

    target = os.path.realpath(output)
    if target in archive_files(db):
        raise CjkTokenizerError(f"{output}: is the archive being exported; name another file")
    through = target.startswith(("/dev/", "/proc/")) or os.path.abspath(output).startswith(("/dev/", "/proc/"))
    if through or (os.path.exists(output) and not os.path.isfile(output)):
        with open(output, "w", encoding="utf-8") as out:
            write(out)
        return
    if os.path.exists(target):
        with open(target, "rb") as f:
            if f.read(16) == b"SQLite format 3\x00":
                raise CjkTokenizerError(f"{output}: is a SQLite database; export writes text, so it is left alone")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise CjkTokenizerError(f"{output}: no such folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".part")
    except PermissionError:
        if not os.path.isfile(target):
            raise
        with open(target, "w", encoding="utf-8") as out:  # a writable file in a folder that is not
            write(out)
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            write(out)
        if os.path.exists(target):
            shutil.copymode(target, tmp)
        else:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _cmd_export(args) -> int:
    from .export import export

    with _read_archive(args.db, mmap_size=args.mmap_size) as ar:
        if args.output:
            _replaced_when_written(args.output, args.db,
                                   lambda out: export(ar, out, session_id=args.session, format=args.format))
        else:
            export(ar, sys.stdout, session_id=args.session, format=args.format)
    return 0


def _cmd_rebuild(args) -> int:
    from .progress import ProgressBar

    bar = ProgressBar("index")
    last = []  # the latest Progress, for the final line

    def progress(p):
        last[:] = [p]
        bar.update(p.done, p.done + p.behind, f"{p.route} {p.phase}")
        return True

    with _open_archive(args.db, auto_catch_up=0, mmap_size=args.mmap_size) as ar:
        if args.full:
            done = ar.indexes.rebuild(args.route, progress, restart=True)
        else:
            done = ar.indexes.catch_up(progress, route=args.route)
        if last:
            bar.finish(last[0].done, last[0].done + last[0].behind, "done" if done else "stopped")
        if args.optimize:
            for route, what in ar.indexes.optimize(args.route).items():
                print(f"{route}: {'merged into one segment' if what == 'merged' else what}")
        for route, st in ar.indexes.status().items():
            print(f"{route}: {st['status']}{'' if st['served'] else ' (not served here)'}, {st['behind']:,} behind")
    return 0


def _cmd_doctor(args) -> int:
    from .doctor import archive_report, host_report

    rows = host_report()
    if args.db:
        rows += archive_report(args.db, integrity=args.integrity, mmap_size=args.mmap_size)
    width = max(len(r[0]) for r in rows)
    for item, finding, ok in rows:
        print(f"{'ok ' if ok else 'BAD'} {item.ljust(width)}  {finding}")
    return 0 if all(ok for *_, ok in rows) else 1


def _cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(scale=args.scale, keep=args.keep)


def _cmd_mcp(args) -> int:
    from .mcp_server import serve

    return serve(args.db, mmap_size=args.mmap_size)


def _mmap_bytes(text: str) -> int:
    from .db import check_mmap_size

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    try:
        return check_mmap_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


class _VersionAction(argparse.Action):
    """``--version``: one line; exit status 1 if the compiled library is missing or of another version."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__, _native

        if not _native.available():
            parser.exit(1, f"cjk-tokenizer {__version__}, without its compiled library: {_native.missing_reason()}\n")
        built = _native.version()
        if built != __version__:
            parser.exit(1, f"cjk-tokenizer {__version__}, but its compiled library is {built}: rebuild it "
                           "(`pip install -e .` in a checkout) or reinstall cjk-tokenizer\n")
        print(f"cjk-tokenizer {__version__}")
        parser.exit(0)


def _add_search_filters(p):
    p.add_argument("--reasoning", action="store_true", help="also search the models' reasoning")
    p.add_argument("--role", action="append", choices=ROLES,
                   help="only these roles (repeatable)")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--after", help="only messages at or after this time: " + FORMATS_HELP)
    p.add_argument("--before", help="only messages before this time (same formats)")
    p.add_argument("--sort", default=DEFAULT_SORT, choices=SORTS)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--route", choices=ROUTES, help="force a route (debugging)")


class _ChoicesOf(Sequence):
    """An option's choices, read from ``module.name`` only when needed (the option
    given, or --help): the list keeps its one definition without every command
    importing the module that holds it (the importers cost a noticeable start-up)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def _names(self) -> tuple:
        return tuple(getattr(importlib.import_module(self.module, __package__), self.name))

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())


class _Parser(argparse.ArgumentParser):
    """argparse, except that ``-word`` is a value unless it is one of the command's options.

    A search query may start with ``-`` (``-部署``, ``-deploy``: an
    exclusion); plain argparse would take it for an unknown option.
    """

    def _parse_optional(self, arg_string):
        if arg_string.startswith("-") and not arg_string.startswith("--") and len(arg_string) > 1 \
                and arg_string not in self._option_string_actions and "=" not in arg_string:
            return None
        return super()._parse_optional(arg_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cjk-tokenizer",
                                     description="CJK full-text search for SQLite: tools and session archives.")
    parser.add_argument("--version", action=_VersionAction,
                        help="print the version (the package's and its compiled library's are one) and exit")
    parser.add_argument("--mmap-size", type=_mmap_bytes, default=MMAP_SIZE, metavar="BYTES",
                        help="read the archive through a memory map of up to BYTES (SQLite's PRAGMA mmap_size; "
                             f"default {MMAP_SIZE >> 30} GiB); 0 reads by system call only: for an archive on a network or "
                             "removable drive, where a read error in a mapped page stops the process")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("path", help="print the loadable library's path (for .load in the sqlite3 shell)")
    p.set_defaults(func=_cmd_path)

    p = sub.add_parser("tokenize", help="show the tokens cjk_unicode61 makes of TEXT (UTF-8 byte offsets)")
    p.add_argument("text")
    p.add_argument("--mode", default="document", choices=TOKENIZE_MODES)
    p.add_argument("--arg", action="append", help="a tokenizer argument (repeat: --arg remove_diacritics --arg 2)")
    p.set_defaults(func=_cmd_tokenize)

    p = sub.add_parser("search", help="search an archive")
    p.add_argument("db")
    p.add_argument("query")
    _add_search_filters(p)
    p.add_argument("--offset", type=int, default=0, help="skip this many hits (paging)")
    p.add_argument("--cursor", help="continue a --sort newest/oldest search where its last page ended "
                                    "(printed as 'next page: --cursor ...')")
    p.add_argument("--json", action="store_true", help="print hits as JSON")
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("explain", help="say which route(s) would serve QUERY on DB, and why")
    p.add_argument("db")
    p.add_argument("query")
    p.add_argument("--reasoning", action="store_true")
    p.add_argument("--sql", action="store_true",
                   help="print the SQL a search runs (first page, by relevance), parameters written in, "
                        "ready for the sqlite3 shell (.load the extension first)")
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("import", help="import agent histories (files, folders, - for stdin) into DB (created if missing)")
    p.add_argument("db")
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="a file, a folder (every file of the format under it) or - (stdin)")
    p.add_argument("--format", default="auto", choices=_ChoicesOf(".importers.driver", "FORMAT_CHOICES"),
                   help="the sources' format (default: detected per file)")
    p.add_argument("--batch-size", type=_positive_int, default=2000, help="messages written per transaction")
    p.add_argument("--no-extension", action="store_true", help="import as a host without the extension would")
    p.add_argument("--fold-variants", action="store_true",
                   help="create DB folding Traditional/Simplified Han variants (項目 = 项目); fixed at creation")
    p.add_argument("--no-optimize", action="store_true",
                   help="do not merge the indexes at the end (by default an import that at least doubles DB does)")
    p.set_defaults(func=_cmd_import)

    p = sub.add_parser("sync", help="import again every source DB was ever given (only what is new is added)")
    p.add_argument("db")
    p.add_argument("--batch-size", type=_positive_int, default=2000, help="messages written per transaction")
    p.add_argument("--no-extension", action="store_true", help="import as a host without the extension would")
    p.add_argument("--no-optimize", action="store_true",
                   help="do not merge the indexes at the end (by default an import that at least doubles DB does)")
    p.set_defaults(func=_cmd_sync)

    p = sub.add_parser("export", help="write DB's sessions as JSONL (imports back) or Markdown (to read)")
    p.add_argument("db")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--format", default="jsonl", choices=_ChoicesOf(".export", "FORMATS"))
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("doctor", help="check SQLite, FTS5, the extension on this host, and DB's indexes")
    p.add_argument("db", nargs="?")
    p.add_argument("--integrity", action="store_true", help="also run FTS5 integrity-check (reads every index)")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser("rebuild", help="bring DB's indexes up to date (incremental; --full rebuilds)")
    p.add_argument("db")
    p.add_argument("--route", choices=FTS_ROUTES)
    p.add_argument("--full", action="store_true", help="rebuild from scratch instead of catching up")
    p.add_argument("--optimize", action="store_true",
                   help="then merge each live index into one segment (faster lookups after a large import)")
    p.set_defaults(func=_cmd_rebuild)

    p = sub.add_parser("mcp", help="serve DB's session_search tool to MCP clients on stdin/stdout (read-only; "
                                   'needs pip install "cjk-tokenizer[mcp]")')
    p.add_argument("db")
    p.set_defaults(func=_cmd_mcp)

    p = sub.add_parser("demo", help="build a sample multilingual archive and search it")
    p.add_argument("--scale", type=_positive_int, default=2000,
                   help="copies of the bundled sessions, the first real, the rest synthetic haystack "
                        "(shifted letters) that the LIKE scan reads too; at least 1")
    p.add_argument("--keep", metavar="PATH", help="keep the demo archive at PATH")
    p.set_defaults(func=_cmd_demo)
    return parser


def _warn_in_one_line(message, category, filename, lineno, file=None, line=None) -> None:
    # e.g. an archive opened without the extension says why, once, without a source line
    print(f"cjk-tokenizer: warning: {message}", file=sys.stderr)


def _not_utf8(args) -> str | None:
    """The first argument the shell passed that is not UTF-8 (Python keeps its bytes as surrogates)."""
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{name.replace('_', '-')} {ascii(item)[:60]} is not UTF-8 text"
    return None


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    bad = _not_utf8(args)
    if bad:
        print(f"cjk-tokenizer: error: {bad}", file=sys.stderr)
        return 1
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warn_in_one_line
            code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly.  Python would try to
        # flush stdout again at exit and complain; point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    except KeyboardInterrupt:
        resumable = getattr(args.func, "__name__", "") in ("_cmd_import", "_cmd_sync", "_cmd_rebuild")
        print("cjk-tokenizer: interrupted" + (" (finished chunks are kept; run the command again to resume)"
                                              if resumable else ""), file=sys.stderr)
        return 130
    except (CjkTokenizerError, ValueError, OSError) as exc:
        print(f"cjk-tokenizer: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # apsw.Error and friends: still one line, still non-zero
        if type(exc).__module__.split(".")[0] != "apsw":
            raise
        where = f"{args.db}: " if isinstance(getattr(args, "db", None), str) else ""
        print(f"cjk-tokenizer: error: {where}SQLite: {exc}", file=sys.stderr)
        return 1
