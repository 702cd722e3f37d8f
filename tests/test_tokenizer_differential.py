"""Differential tests: on text without CJK letters, cjk_unicode61 IS unicode61.

The promise (csrc/cjk_tokenizer.h): non-CJK text yields exactly the
tokens, positions and byte offsets that the host's own unicode61 yields with the
same arguments.  The one documented exception is the width folding of
full-width ASCII (U+FF01..U+FF5E), so those code points are kept out of the
inputs here, as are the CJK letters of ``cjk_tokenizer.cjk_ranges()``.

We compare whole token streams as APSW reports them: ``(start, end, token,
*colocated)`` per position, in every tokenize mode.  Positions are also
compared inside real FTS5 tables through ``fts5vocab`` (``instance``).
"""
from __future__ import annotations

import apsw
import apsw.fts5
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cjk_tokenizer

MODES = (
    apsw.FTS5_TOKENIZE_DOCUMENT,
    apsw.FTS5_TOKENIZE_QUERY,
    apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX,
    apsw.FTS5_TOKENIZE_AUX,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def excluded_cp(cp: int) -> bool:
    """Code points outside the unicode61-parity promise: CJK letters and full-width ASCII."""
    if 0xFF01 <= cp <= 0xFF5E:
        return True
    if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
        return False  # never CJK; read as U+FFFD
    return cjk_tokenizer.is_cjk(chr(cp))


def ok_char(ch: str) -> bool:
    return not excluded_cp(ord(ch))


def _short(entry):
    return tuple(t if not isinstance(t, str) or len(t) <= 24 else f"{t[:10]}...{t[-10:]} ({len(t)} chars)"
                 for t in entry)


def assert_same_as_unicode61(run_tokenizer, args, data: bytes):
    for flags in MODES:
        want = run_tokenizer("unicode61", args, data, flags)
        got = run_tokenizer("cjk_unicode61", args, data, flags)
        if got != want:
            i = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            pytest.fail(
                f"cjk_unicode61 differs from unicode61 (args={args!r}, flags={flags}, {len(data)} bytes "
                f"{data[:80]!r}...): first difference at token {i}: "
                f"cjk_unicode61 {[_short(e) for e in got[i:i + 3]]} vs unicode61 {[_short(e) for e in want[i:i + 3]]}"
            )


# ---- the inputs -------------------------------------------------------------

HAND_PICKED = [
    # Latin with diacritics, precomposed and decomposed
    "Crème brûlée, naïve façade, señor Ångström, Łódź, Škoda, Ærø, œuvre, Straße",
    "e\u0301te\u0301 n\u0303 o\u0308 A\u030a \u0301lone mark, x\u0323\u0302 stacked",
    "İstanbul ıi ǅemal ŉ ﬁnance ﬂow Ǆ ǈ ǋ",
    # Cyrillic, Greek, Armenian, Georgian, Hebrew, Thai, Devanagari
    "Съешь же ещё этих мягких французских булок, да выпей чаю. Ёлка й и\u0306",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΐ ΰ ς Σίσυφος ΆΈΉ",
    "Բարեւ Ձեզ  გამარჯობა  שָׁלוֹם עולם  สวัสดีครับ  नमस्ते दुनिया",
    # Arabic with harakat, tatweel, Arabic-Indic digits
    "العَرَبِيَّة مرحـــبا بالعالم ٠١٢٣٤٥٦٧٨٩ ۰۱۲ ﷺ ﻻ",
    # digits and number forms
    "0 12 3.14159 1,000,000 -42 +7 1e10 0x1F ²³¹ ½ ⅓ ① Ⅻ ⁴ 𝟘𝟙",
    # emoji: ZWJ sequences, skin tones, flags, variation selectors, keycaps
    "😀 👍🏽 👨\u200d👩\u200d👧\u200d👦 🇯🇵🇰🇷 ❤\ufe0f ✨ 1\ufe0f\u20e3 🏳\ufe0f\u200d🌈 a😀b",
    # ASCII punctuation and typographic punctuation
    "Don't stop: e-mail, x_y, a.b.c, foo@bar.com #tag $5 50% a&b (x) [y] {z} <w> \"q\" 'p' `c` ~ ^ | \\ /",
    "– — … ‘quoted’ “double” «guillemets» ¿qué? ¡sí! § ¶ • † ‡ ′ ″ ‰",
    # whitespace of every kind, controls, NUL
    "a\tb\nc\rd\x0be\x0cf\u00a0g\u2000h\u2028i\u2029j\u3000k\u200bl\ufeffm\x00n\x1eo\x7fp",
    # neighbours of the excluded blocks: half-width punctuation, full-width signs,
    # CJK symbols that are NOT letters (・ 〜 〒 ㈱ ㍿ ㊤ ゠)
    "｡｢｣､･ ｟｠ ￠￡￢￣￤￥￦ ・〜〒㈱㍿㊤゠〃〄 ︰︱ ﹐﹑ ㆐㆑",
    # outside the BMP, non-CJK: math alphanumerics, Gothic, Linear B, private use
    "𝐀𝐁𝐂 𝔄𝔅 𐌰𐌱 𐀀𐀁 \ue000\uf8ff \U000f0000 \U0010fffd",
    # code-like text
    "def f(x): return x**2  # comment\nSELECT * FROM t WHERE a<>b; path/to/file.py:42",
    "",
    " ",
]


def _strip_excluded(data: bytes) -> bytes:
    s = data.decode("utf-8", "surrogatepass")
    return "".join(ch if ok_char(ch) else " " for ch in s).encode("utf-8", "surrogatepass")


TEST_STRINGS = [(comment, _strip_excluded(b)) for b, comment in apsw.fts5.tokenizer_test_strings()]

ARGSETS = [
    [],
    ["remove_diacritics", "0"],
    ["remove_diacritics", "1"],
    ["remove_diacritics", "2"],
    ["tokenchars", "-_.@'"],
    ["separators", "aeo"],
    ["tokenchars", "#", "separators", "x"],
    ["categories", "L*"],
    ["categories", "L* N* Co M*"],
    ["categories", "L* N* Co P* S*"],
    ["categories", "Lu Nd"],
    ["categories", "C* L* M* N* P* S* Z*"],
    ["remove_diacritics", "2", "categories", "L* N* Co Mn", "tokenchars", "é-"],
    ["remove_diacritics", "0", "separators", "éß", "tokenchars", "\u0301"],
]


@pytest.mark.parametrize("args", ARGSETS, ids=lambda a: " ".join(a) or "default")
def test_hand_picked_text_matches_unicode61(run_tokenizer, args):
    for text in HAND_PICKED:
        assert_same_as_unicode61(run_tokenizer, args, text.encode("utf-8"))
    # the same texts glued together, so tokens straddle the joins
    assert_same_as_unicode61(run_tokenizer, args, "".join(HAND_PICKED).encode("utf-8"))


@pytest.mark.parametrize("args", ARGSETS, ids=lambda a: " ".join(a) or "default")
def test_apsw_tokenizer_test_strings_match_unicode61(run_tokenizer, args):
    for comment, data in TEST_STRINGS:
        assert_same_as_unicode61(run_tokenizer, args, data)


def test_inputs_really_are_non_cjk(run_tokenizer):
    # Guard against a vacuous differential: a CJK letter slipping into the
    # inputs would be split by cjk_unicode61 and make the comparison fail,
    # while an over-eager exclusion would hide real differences.
    for text in HAND_PICKED:
        assert all(ok_char(ch) for ch in text), text
    assert sum(len(d) for _, d in TEST_STRINGS) > 5000
    # the exclusion really covers what cjk_unicode61 treats differently
    assert run_tokenizer("cjk_unicode61", [], "中文") != run_tokenizer("unicode61", [], "中文")
    assert run_tokenizer("cjk_unicode61", [], "ＡＢ") != run_tokenizer("unicode61", [], "ＡＢ")


# ---- generated text -----------------------------------------------------------

PIECES = [
    "a", "Z", "é", "e\u0301", "ß", "ﬁ", "İ", "ı", "ж", "Ё", "й", "λ", "Σ", "ς", "ά", "ش", "ـ", "\u064e",
    "٣", "7", "0", "²", "½", "😀", "👍🏽", "\u200d", "\ufe0f", "🇯🇵", " ", "  ", "\t", "\n", "\r\n",
    "\u00a0", "\u3000", ".", ",", "-", "_", "'", "@", "#", "/", "…", "—", "«", "»", "｡", "､", "･",
    "・", "〜", "￥", "\x00", "\x1e", "\u0301", "\u0308", "\ue000", "𝐀", "𐌰", "hello", "Wörld",
]

non_cjk_char = st.characters(codec="utf-8").filter(ok_char)
low_char = st.characters(max_codepoint=0x10FF, codec="utf-8")  # all below U+1100: never CJK
non_cjk_text = st.lists(
    st.one_of(st.sampled_from(PIECES), low_char, non_cjk_char), max_size=40
).map("".join)

ARG_CHARS = "-_.@#'/é\u0301ßx0 "
tokenchars_or_separators = st.text(alphabet=ARG_CHARS, min_size=0, max_size=4)


@st.composite
def unicode61_args(draw):
    args = []
    opts = draw(st.lists(st.sampled_from(["remove_diacritics", "tokenchars", "separators", "categories"]),
                         unique=True, max_size=4))
    for name in draw(st.permutations(opts)):
        if name == "remove_diacritics":
            value = draw(st.sampled_from("012"))
        elif name == "categories":
            value = " ".join(draw(st.lists(st.sampled_from(
                ["L*", "N*", "Co", "M*", "Mn", "P*", "S*", "Z*", "C*", "Lu", "Ll", "Nd", "Cc", "Zs"]),
                min_size=1, max_size=5, unique=True)))
        else:
            value = draw(tokenchars_or_separators)
        args += [name, value]
    return args


@FAST
@given(text=non_cjk_text, args=unicode61_args())
@example(text="", args=[])
@example(text="naïve café", args=["remove_diacritics", "0"])
@example(text="a-b_c d'e", args=["tokenchars", "-_'"])
@example(text="a\u0301b", args=["remove_diacritics", "2", "categories", "L*"])
def test_generated_text_matches_unicode61(run_tokenizer, text, args):
    assert_same_as_unicode61(run_tokenizer, args, text.encode("utf-8"))


def _has_excluded(data: bytes, utf8_reader) -> bool:
    return any(excluded_cp(cp) for _, _, cp in utf8_reader(data))


def _blank_excluded(data: bytes, utf8_reader) -> bytes:
    """Replace every character the tokenizer would read as CJK/full-width with b' '.

    A replaced character starts with a non-continuation byte and ends where the
    next one starts, so the rest of the input reads exactly as before."""
    out = bytearray()
    for start, end, cp in utf8_reader(data):
        out += b" " if excluded_cp(cp) else data[start:end]
    return bytes(out)


BYTE_CHUNKS = [
    b"\x80", b"\xbf", b"\xc0\x80", b"\xc3", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80", b"\xf0\x9f\x98", b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff", b"\x00",
    b"\xef\xbf\xbe", b"\xc2\xaa", b"\xe4\xb8", b"\xe4", b"\xf0",
]
non_cjk_bytes = st.lists(
    st.one_of(
        st.sampled_from(BYTE_CHUNKS),
        st.binary(min_size=1, max_size=3),
        non_cjk_text.map(lambda s: s.encode("utf-8")),
    ),
    max_size=20,
).map(b"".join)


def _valid_pieces(data: bytes, utf8_reader):
    """Split data at every sequence the tokenizer's reader calls malformed.

    Yields ``(offset, piece)``: the runs of well-formed text between them."""
    start = 0
    for s, e, cp in utf8_reader(data):
        if cp == 0xFFFD and data[s:e] != "\ufffd".encode():
            yield start, data[start:s]
            start = e
    yield start, data[start:]


@settings(max_examples=150, deadline=None)
@given(raw=non_cjk_bytes, args=st.sampled_from(ARGSETS))
@example(raw=b"abc\xb5def\xc2\x80\x80ghi", args=[])  # SQLite's reader makes "abc\xb5def" one word
@example(raw=b"\xc4\xb8\x80x", args=[])  # SQLite's reader makes U+4E00 of this
@example(raw=b"caf\xe0\x83\xa9 ok", args=[])  # and é of this overlong form
def test_invalid_utf8_is_a_separator(run_tokenizer, utf8_reader, raw, args):
    # Invalid UTF-8 ends a token even where SQLite's reader would decode a
    # letter out of it (an overlong form, a stray byte): the text on each
    # side is tokenized as unicode61 tokenizes it alone, offsets unchanged.
    # So the index never holds a word that a reader of the text as UTF-8
    # (Python, LIKE on the bytes) cannot see.
    data = _blank_excluded(raw, utf8_reader)
    assert not _has_excluded(data, utf8_reader)
    for flags in MODES:
        want = []
        for off, piece in _valid_pieces(data, utf8_reader):
            for start, end, *toks in run_tokenizer("unicode61", args, piece, flags):
                want.append((start + off, end + off, *toks))
        assert run_tokenizer("cjk_unicode61", args, data, flags) == want, (data, args, flags)


def test_overlong_cjk_letter_is_not_indexed(conn):
    # U+4E2D (中) in four bytes: SQLite's reader decodes it, Python does not.
    # The index must not find what the scan route cannot.
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO t VALUES (CAST(? AS TEXT))", (b"ab \xf0\x84\xb8\xad x",))
    conn.execute("INSERT INTO t VALUES (?)", ("ab 中 x",))
    hits = [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH '\"中\"'")]
    assert hits == [2]
    assert [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH 'ab AND x'")] == [1, 2]


# ---- long non-CJK segments (the tokenizer hands them over in pieces) -----------

def _long_text():
    line = "The quick brown fox jumps over the lazy dog; naïve café № 42 Ünïcödé 😀\n"
    words = "antidisestablishmentarianism " * 50
    return (line * 1500 + words + "\n" + line * 1500 + "x" * 70000 + "\n" + "tail end\n").encode("utf-8")


@pytest.mark.parametrize(
    "args",
    [[], ["remove_diacritics", "2"], ["tokenchars", "\n"], ["separators", "o"]],
    ids=["default", "rd2", "newline-tokenchar", "sep-o"],
)
def test_long_segment_matches_unicode61(run_tokenizer, args):
    data = _long_text()
    assert len(data) > 3 * 65536
    assert_same_as_unicode61(run_tokenizer, args, data)


@pytest.mark.parametrize(
    "args",
    [["categories", "L* N* Co Cc"], ["categories", "C* L* N*"], ["TOKENCHARS", "\n"]],
    ids=["categories-Cc", "categories-C*", "TOKENCHARS-newline"],
)
def test_long_segment_with_newline_as_token_char_matches_unicode61(run_tokenizer, args):
    # When '\n' is a token character for unicode61 (categories with Cc, or
    # tokenchars, whatever the case of the option name), a long non-CJK segment
    # must not be cut at a newline.
    data = b"a" * 70000 + b"\nbbb " + b"c" * 10 + b"\nd"
    assert cjk_tokenizer._native.tokenizer_args_error(args) is None
    assert_same_as_unicode61(run_tokenizer, args, data)


# ---- arguments: everything unicode61 accepts, cjk_unicode61 accepts alike -------

ACCEPTED_BY_UNICODE61 = [
    ["REMOVE_DIACRITICS", "2"],
    ["Remove_Diacritics", "0"],
    ["TokenChars", "-"],
    ["SEPARATORS", "x"],
    ["Categories", "L*"],
    ["categories", "L*\tN*"],
    ["categories", " L*  N* "],
    ["categories", ""],
    ["tokenchars", ""],
    ["separators", ""],
    ["remove_diacritics", "1", "remove_diacritics", "0"],
]


@pytest.mark.parametrize("args", ACCEPTED_BY_UNICODE61, ids=repr)
def test_arguments_unicode61_accepts_are_accepted(run_tokenizer, args):
    data = "Crème-brûlée x ÉTÉ naïve a\tb".encode("utf-8")
    want = run_tokenizer("unicode61", args, data)  # sanity: unicode61 takes them
    assert cjk_tokenizer._native.tokenizer_args_error(args) is None
    assert run_tokenizer("cjk_unicode61", args, data) == want


@pytest.mark.parametrize("name", ["SEPARATORS", "Separators"])
def test_option_names_are_case_insensitive_for_cjk_separators_too(run_tokenizer, name):
    # unicode61 matches option names case-insensitively; a CJK letter named in
    # separators must then split CJK runs exactly as with "separators".
    data = "我的书 a的b 的的".encode("utf-8")
    want = run_tokenizer("cjk_unicode61", ["separators", "的"], data)
    assert [t[2] for t in want] == ["我", "书", "a", "b"]
    assert cjk_tokenizer._native.tokenizer_args_error([name, "的"]) is None
    assert run_tokenizer("cjk_unicode61", [name, "的"], data) == want


# ---- positions inside real FTS5 tables -------------------------------------------

def _instances(conn, table):
    conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, instance)")
    return list(conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{table} ORDER BY doc, col, offset, term"))


@pytest.mark.parametrize("args", [[], ["remove_diacritics", "2", "tokenchars", "-_"], ["categories", "L* N* Co P*"]],
                         ids=["default", "rd2-tokenchars", "punct"])
def test_positions_in_fts5_table_match_unicode61(conn, args):
    spec = " ".join(f"'{a}'" if a else "''" for a in args)
    conn.execute(f"CREATE VIRTUAL TABLE tu USING fts5(a, b, tokenize=\"unicode61 {spec}\")")
    conn.execute(f"CREATE VIRTUAL TABLE tc USING fts5(a, b, tokenize=\"cjk_unicode61 {spec}\")")
    docs = HAND_PICKED + [d.decode("utf-8", "replace") for _, d in TEST_STRINGS]
    for i, text in enumerate(docs):
        other = docs[(i * 7 + 3) % len(docs)]
        for t in ("tu", "tc"):
            conn.execute(f"INSERT INTO {t}(rowid, a, b) VALUES (?, ?, ?)", (i + 1, text, other))
    got, want = _instances(conn, "tc"), _instances(conn, "tu")
    assert len(want) > 1000
    assert got == want
    # and the same queries find the same rows with the same highlights
    for query in ["fox", "naïve", "s*", '"brown fox"', "NEAR(quick dog, 5)", "e-mail", "a*"]:
        try:
            want_rows = list(conn.execute("SELECT rowid, highlight(tu, 0, '[', ']') FROM tu WHERE tu MATCH ?", (query,)))
        except apsw.SQLError:
            continue
        got_rows = list(conn.execute("SELECT rowid, highlight(tc, 0, '[', ']') FROM tc WHERE tc MATCH ?", (query,)))
        assert got_rows == want_rows, query
    conn.execute("INSERT INTO tc(tc) VALUES ('integrity-check')")


# ---- the documented exception, precisely: full-width ASCII is ASCII ------------------

def _widen(s: str, mask) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if w and "!" <= c <= "~" else c for c, w in zip(s, mask))


@FAST
@given(
    text=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
    | st.lists(st.sampled_from(["ab", "Hello", "123", "e-mail", "x_y", " ", ".", "naïve", "A1", "-"]), max_size=12).map("".join),
    mask_seed=st.randoms(use_true_random=False),
    args=st.sampled_from([[], ["tokenchars", "-_"], ["separators", "e"], ["remove_diacritics", "0"],
                          ["categories", "L* N* Co P*"]]),
)
def test_fullwidth_ascii_tokenizes_as_ascii_with_original_offsets(run_tokenizer, text, mask_seed, args):
    mask = [mask_seed.random() < 0.5 for _ in text]
    wide = _widen(text, mask)
    data = wide.encode("utf-8")
    # byte offset in `data` of each character boundary of `text`
    at = [0]
    for ch in wide:
        at.append(at[-1] + len(ch.encode("utf-8")))
    byte_to_char = {b: i for i, b in enumerate([0] + [len(text[:i].encode()) for i in range(1, len(text) + 1)])}
    want = [(at[byte_to_char[s]], at[byte_to_char[e]], *toks)
            for s, e, *toks in run_tokenizer("unicode61", args, text.encode("utf-8"))]
    for flags in MODES:
        assert run_tokenizer("cjk_unicode61", args, data, flags) == want, wide


@pytest.mark.parametrize("args", [[], ["tokenchars", "-"], ["categories", "L* N* Co P*"]], ids=repr)
def test_long_fullwidth_segment_matches_unicode61_on_the_folded_text(run_tokenizer, args):
    # Folded text goes to unicode61 a piece at a time: tokens that straddle a
    # piece boundary, and a token longer than a piece, come out whole.
    text = ("ab-cd " * 20000 + "x" * 150000 + " " + "e-f, " * 30000 + "tail")
    mask = [i % 3 == 0 for i in range(len(text))]
    wide = _widen(text, mask)
    data = wide.encode("utf-8")
    assert len(data) > 4 * 65536 and "\n" not in text
    at = [0]
    for ch in wide:
        at.append(at[-1] + len(ch.encode("utf-8")))
    want = [(at[s], at[e], *toks) for s, e, *toks in run_tokenizer("unicode61", args, text.encode())]
    for flags in (apsw.FTS5_TOKENIZE_DOCUMENT, apsw.FTS5_TOKENIZE_QUERY):
        assert run_tokenizer("cjk_unicode61", args, data, flags) == want
