"""The C helpers Python needs, from the compiled cffi module.

The definition of "what is CJK" and the width folding live in csrc/cjk_chars.c;
this module only calls them.  If the compiled module is missing (a broken
install), ``available()`` is False and the callers choose a safe meaning.
"""
from __future__ import annotations

import os


def _installed_copy(here: str) -> str | None:
    """The package directory of an installed cjk-tokenizer other than ``here``, if any."""
    from importlib.metadata import distributions

    # A checkout where ``pip install .`` ran also holds cjk_tokenizer.egg-info,
    # which names the checkout itself: look at every copy.  (Only this error
    # path reads the metadata; distributions(name=...) needs Python 3.10.)
    for dist in distributions():
        if (dist.metadata["Name"] or "").lower().replace("_", "-") != "cjk-tokenizer":
            continue
        located = os.path.dirname(os.path.abspath(str(dist.locate_file("cjk_tokenizer/__init__.py"))))
        if located != here and os.path.isfile(os.path.join(located, "__init__.py")):
            return located
    return None


def _why_missing(exc: ImportError) -> str:
    """One line: why the compiled module cannot be imported here, and what to run instead."""
    here = os.path.dirname(os.path.abspath(__file__))
    built = [f for f in os.listdir(here) if f.startswith("_cjk_unicode61.")]
    if built:  # there, but it does not load: the loader's reason is the useful part
        return f"the compiled module {os.path.join(here, built[0])} does not load ({exc}); reinstall cjk-tokenizer"
    installed = _installed_copy(here)
    if installed:
        # ``python -m`` and ``python -c`` put the current directory first on
        # sys.path, so Python started in a checkout imports the source tree,
        # which ``pip install .`` leaves without compiled files.
        return (f"Python imported cjk_tokenizer from the source tree {here}, which shadows the installed copy in "
                f"{installed} and has no compiled module; run from another directory (or the `cjk-tokenizer` "
                "command), or build the source tree in place with `pip install -e .`")
    if os.path.isfile(os.path.join(os.path.dirname(here), "python", "build_cffi.py")):
        return (f"the compiled module _cjk_unicode61 is not built in the source tree {here}; "
                "run `pip install -e .` (or `python python/setup_build.py build_ext --inplace`)")
    return f"the compiled module _cjk_unicode61 is missing from {here}; reinstall cjk-tokenizer"


try:  # the cffi module built from csrc/ by python/cjk_build.py
    from . import _cjk_unicode61 as _mod

    # Only the module beside this file belongs to this code: an editable
    # install of another tree can hand out its own through an import hook.
    if os.path.dirname(os.path.abspath(_mod.__file__)) != os.path.dirname(os.path.abspath(__file__)):
        raise ImportError(f"found only another tree's compiled module, {_mod.__file__}")
except ImportError as _exc:  # pragma: no cover - exercised by a broken install
    _mod = None
    IMPORT_ERROR: str | None = _why_missing(_exc)
else:
    IMPORT_ERROR = None


def missing_reason() -> str:
    """Why the compiled module cannot be used (for error messages)."""
    return IMPORT_ERROR or "the compiled module _cjk_unicode61 is missing; reinstall the package"


def available() -> bool:
    return _mod is not None


def version() -> str:
    """The version the C library was built as (what ``SELECT version FROM cjk_version`` answers)."""
    m = _need()
    return m.ffi.string(m.lib.cjk_version()).decode("ascii")


def gap_token() -> str:
    """The token cjk_unicode61 puts between two CJK runs that must not form a
    phrase across the text between them (csrc/cjk_tokenizer.h, CJK_GAP_TOKEN)."""
    m = _need()
    return m.ffi.string(m.lib.CJK_GAP_TOKEN).decode("utf-8")


def module_path() -> str | None:
    """File of the compiled cffi module (importing it maps the library load() hands SQLite)."""
    return None if _mod is None else os.path.abspath(_mod.__file__)


def _need():
    if _mod is None:
        from .errors import ExtensionError

        raise ExtensionError(missing_reason())
    return _mod


def cjk_mask(text: str) -> bytes:
    """One byte per character of ``text``: 1 where it is a CJK letter, else 0."""
    m = _need()
    n = len(text)
    if n == 0:
        return b""
    cps = text.encode("utf-32-le", "surrogatepass")
    out = m.ffi.new("unsigned char[]", n)
    m.lib.cjk_classify_utf32(m.ffi.from_buffer("uint32_t[]", cps), n, out)
    return bytes(m.ffi.buffer(out, n))


def is_cjk(ch: str) -> bool:
    """True if the single character ``ch`` is a CJK letter."""
    if len(ch) != 1:
        raise ValueError("is_cjk() takes exactly one character")
    return bool(_need().lib.cjk_is_cjk(ord(ch)))


def split_cjk(text: str) -> list[tuple[bool, str]]:
    """Split ``text`` into maximal spans, each ``(is_cjk, substring)``."""
    mask = cjk_mask(text)
    spans: list[tuple[bool, str]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or mask[i] != mask[start]:
            spans.append((bool(mask[start]), text[start:i]))
            start = i
    return spans


def fold(text: str, variants: bool = False) -> str:
    """The folding the tokenizer applies: width (Ｈｅｌｌｏ -> Hello, ｶﾞ -> ガ),
    variation selectors after a CJK letter dropped, and with ``variants`` the
    Han variant folding of ``fold_variants 1`` (項目 -> 项目)."""
    m = _need()
    data = text.encode("utf-8", "surrogatepass")
    if not data:
        return text
    cap = len(data) + len(data) // 3 + 1 if variants else len(data)  # CJK_FOLD_MAX
    out = m.ffi.new("char[]", cap)
    n = m.lib.cjk_fold_utf8(data, len(data), out, cap, 1 if variants else 0)
    if n > cap:  # never, by the C bound; but never read past the buffer either
        out = m.ffi.new("char[]", n)
        n = m.lib.cjk_fold_utf8(data, len(data), out, n, 1 if variants else 0)
    return m.ffi.unpack(out, n).decode("utf-8", "surrogatepass")


def variant_pairs() -> list[tuple[str, str]]:
    """The Han variant table of ``fold_variants 1``: (character, its fold)."""
    lib = _need().lib
    return [(chr(lib.cjk_variant_pair(i, 0)), chr(lib.cjk_variant_pair(i, 1))) for i in range(lib.cjk_variant_count())]


def cjk_ranges() -> list[tuple[int, int]]:
    """The inclusive code point ranges that make up the CJK definition."""
    lib = _need().lib
    return [(lib.cjk_range_bound(i, 0), lib.cjk_range_bound(i, 1)) for i in range(lib.cjk_range_count())]


def tokenizer_args_error(args) -> str | None:
    """Why ``cjk_unicode61`` would reject ``args``, or None if it accepts them."""
    m = _need()
    items = [m.ffi.new("char[]", str(a).encode("utf-8")) for a in args]
    argv = m.ffi.new("const char *[]", items) if items else m.ffi.NULL
    err = m.ffi.new("char[]", 512)
    if m.lib.cjk_check_args(argv, len(items), err, 512):
        return m.ffi.string(err).decode("utf-8", "replace")
    return None


def snippet_window(text: str, matches, budget: int) -> tuple[int, int, bool, bool, tuple[int, int] | None]:
    """The one snippet rule (csrc/cjk_snippet.h), applied to ``text``.

    ``matches``: ``(start, end, phrase)`` character spans of ``text`` (phrase:
    0, 1, ... for the query's distinct searched-for terms); ``budget``: the
    characters the snippet may show, ellipses not counted.  Returns ``(start,
    end, cut_before, cut_after, first)``: the window ``text[start:end]``,
    whether non-space text was left out on each side, and the span in ``text``
    of the first highlight the window shows (None if none).  ``text`` must
    encode as UTF-8 (units.clean)."""
    m = _need()
    data = text.encode("utf-8")
    flat = [int(v) for match in matches for v in match]
    n_match = len(flat) // 3
    n_phrase = max(flat[2::3], default=-1) + 1
    budget = max(1, min(int(budget), 1 << 29))
    size = m.lib.cjk_snippet_work_size(n_match, n_phrase, budget, len(text))
    work = m.ffi.new("int[]", (size + 3) // 4)  # int-aligned, as the C side requires
    out = m.ffi.new("int[6]")
    rc = m.lib.cjk_snippet_window(data, len(data), len(text), flat if flat else m.ffi.NULL, n_match, n_phrase,
                                  budget, work, size, out)
    if rc != 0 or size == 0:
        raise ValueError(f"snippet_window: matches must be (start, end, phrase) spans of the text, not {matches!r}")
    first = (out[4], out[5]) if out[4] >= 0 else None
    return out[0], out[1], bool(out[2]), bool(out[3]), first


def is_extender(ch: str) -> bool:
    """True if ``ch`` extends the character before it (a snippet never splits them)."""
    return bool(_need().lib.cjk_is_extender(ord(ch)))
