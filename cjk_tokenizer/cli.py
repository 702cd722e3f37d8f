"""Command line: ``python -m cjk_tokenizer <command>`` (also ``cjk-tokenizer``)."""
from __future__ import annotations

import argparse
import sys

from . import loadable_path, tokenize
from .errors import CjkTokenizerError


def _cmd_path(args) -> int:
    print(loadable_path())
    return 0


def _cmd_tokenize(args) -> int:
    data = args.text.encode("utf-8", "surrogatepass")
    for token, start, end, colocated in tokenize(args.text, mode=args.mode, args=args.arg or ()):
        shown = token.encode("unicode_escape").decode() if token == "\x1e" else token
        original = data[start:end].decode("utf-8", "replace")
        print(f"{'  +' if colocated else ''}{shown}\t{start}-{end}\t{original}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cjk-tokenizer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("path", help="print the path of the loadable library (for .load in the sqlite3 shell)")
    p.set_defaults(func=_cmd_path)
    p = sub.add_parser("tokenize", help="show the tokens cjk_unicode61 makes of TEXT (byte offsets)")
    p.add_argument("text")
    p.add_argument("--mode", default="document", choices=["document", "query", "prefix", "aux"])
    p.add_argument("--arg", action="append", help="a tokenizer argument (repeat: --arg remove_diacritics --arg 2)")
    p.set_defaults(func=_cmd_tokenize)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CjkTokenizerError, ValueError, OSError) as exc:
        print(f"cjk-tokenizer: error: {exc}", file=sys.stderr)
        return 1
