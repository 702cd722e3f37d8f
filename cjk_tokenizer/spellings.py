"""Raw spellings of folded text, for the routes that see unfolded text.

The cjk index and the scan compare *folded* text (Ｈｅｌｌｏ = Hello,
ｶﾞ = カ+゛ = ガ).  The trigram and unicode61 indexes hold the text as written,
so to find every occurrence of a folded string they must look for each way it
can be written.  This module answers "which raw strings fold to this?" by
asking the C folding itself (``_native.fold``) once for every character of the
Basic Multilingual Plane, where every width variant lives, and for every CJK
letter followed by each voiced mark; Python keeps no folding table of its own.
Under Han variant folding (``variants=True``, an archive created with
``fold_variants=True``) the C variant table is added: 项 is also written 項.

A character is *stable* when it is written only one way and never merges with
a following mark: then the raw text contains it exactly where the folded text
does, and plain ``instr()``/trigram on raw text is exact for it.
"""
from __future__ import annotations

import itertools
import threading
from functools import lru_cache

from . import _native

# Code points probed: the BMP (all width variants are there).
_PROBE_LIMIT = 0x10000
_lock = threading.Lock()
_tables: dict = {}  # variants -> (inverse: dict[str, tuple[str, ...]], bases: frozenset[str])


def _build(variants: bool):
    cps = [c for c in range(1, _PROBE_LIMIT) if not (0xD800 <= c < 0xE000) and c != 0x0A]
    if variants:  # variant sources beyond the BMP
        cps += sorted({ord(a) for a, _ in _native.variant_pairs() if ord(a) >= _PROBE_LIMIT})
    folded = _native.fold("\n".join(map(chr, cps)), variants).split("\n")
    assert len(folded) == len(cps), "folding must keep newlines as they are"
    inverse: dict[str, set[str]] = {}
    for cp, f in zip(cps, folded):
        ch = chr(cp)
        if f != ch:
            inverse.setdefault(f, {f}).add(ch)
    # Marks are whatever folds to a combining voiced mark; bases are the CJK
    # letters that merge with one of them.
    marks = sorted(c for c, f in zip(cps, folded) if len(f) == 1 and 0x3099 <= ord(f) <= 0x309A)
    letters = "".join(map(chr, cps))
    mask = _native.cjk_mask(letters)
    cjk = [ch for ch, m in zip(letters, mask) if m]
    pairs = [b + chr(m) for b in cjk for m in marks]
    composed = _native.fold("\n".join(pairs), variants).split("\n")
    bases = set()
    for pair, f in zip(pairs, composed):
        if len(f) == 1:
            bases.add(pair[0])
            inverse.setdefault(f, {f}).add(pair)
    return {k: tuple(sorted(v)) for k, v in inverse.items()}, frozenset(bases)


def _get(variants: bool = False):
    variants = bool(variants)
    tables = _tables.get(variants)
    if tables is None:
        with _lock:
            tables = _tables.get(variants)
            if tables is None:
                tables = _tables[variants] = _build(variants)
    return tables


def preimages(ch: str, variants: bool = False) -> tuple[str, ...]:
    """Every raw string (1 or 2 characters) that folds to the character ``ch``."""
    return _get(variants)[0].get(ch, (ch,))


@lru_cache(maxsize=8192)
def is_stable(ch: str, variants: bool = False) -> bool:
    inverse, bases = _get(variants)
    return ch not in inverse and ch not in bases


def all_stable(text: str, variants: bool = False) -> bool:
    return all(is_stable(c, variants) for c in text)


def count(text: str, variants: bool = False, cap: int | None = None) -> int:
    """How many raw spellings folded ``text`` has; with ``cap``, any number
    above ``cap`` once the count passes it (the product only grows)."""
    n = 1
    for c in text:
        n *= len(preimages(c, variants))
        if cap is not None and n > cap:
            return n
    return n


def spellings(text: str, cap: int, variants: bool = False) -> list[str] | None:
    """All raw spellings of folded ``text``, or None if there are more than ``cap``."""
    if count(text, variants, cap) > cap:
        return None
    return ["".join(p) for p in itertools.product(*(preimages(c, variants) for c in text))]


def best_window(text: str, min_len: int, cap: int, variants: bool = False) -> tuple[str, list[str]] | None:
    """The longest substring of ``text`` (at least ``min_len`` characters) whose
    spellings number at most ``cap``, with those spellings; ties go to the
    fewest spellings, then to the earliest.  None if there is none.

    Linear in ``len(text)``: every character has at least one spelling, so a
    window's count only grows as it widens, and one sliding pass finds the
    longest window within ``cap``; a second pass scores the windows of that
    length.  Counts in a window stay at most ``cap`` times one character's.
    """
    ks = [len(preimages(c, variants)) for c in text]
    best_len, lo, prod = 0, 0, 1
    for hi, k in enumerate(ks):
        prod *= k
        while prod > cap and lo <= hi:
            prod //= ks[lo]
            lo += 1
        best_len = max(best_len, hi + 1 - lo)
    if best_len < max(min_len, 1):
        return None
    best, prod = None, 1
    for hi, k in enumerate(ks):
        prod *= k
        if hi >= best_len:
            prod //= ks[hi - best_len]
        if hi + 1 >= best_len and prod <= cap and (best is None or prod < best[0]):
            best = (prod, hi + 1 - best_len)
    window = text[best[1]: best[1] + best_len]
    return window, spellings(window, cap, variants)
