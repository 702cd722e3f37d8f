"""Robustness: any byte string, any size, any mode -- valid offsets, no crash, INSERT works.

Policy: offsets satisfy 0 <= start <= end <= nText and fall on the
character boundaries of the input as SQLite reads UTF-8; invalid bytes act as
separators -- never a crash, never a dropped document, never a
failed INSERT.  Bad tokenizer arguments fail table creation, and Python says
why.  Codes returned by xToken stop tokenizing and come back from xTokenize,
except SQLITE_DONE, which comes back as SQLITE_OK as from SQLite's own
tokenizers.
"""
from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
import textwrap

import apsw
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cjk_tokenizer

MODES = {
    "document": apsw.FTS5_TOKENIZE_DOCUMENT,
    "query": apsw.FTS5_TOKENIZE_QUERY,
    "prefix": apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX,
    "aux": apsw.FTS5_TOKENIZE_AUX,
}

INVALID = {
    "truncated-2": b"\xc3",
    "truncated-3": b"\xe4\xb8",
    "truncated-3-lead-only": b"\xe4",
    "truncated-4": b"\xf0\x9f\x98",
    "overlong-nul": b"\xc0\x80",
    "overlong-slash": b"\xe0\x80\xaf",
    "overlong-4": b"\xf0\x80\x80\x80",
    "overlong-cjk": b"\xf0\x84\xb8\x80",  # U+4E00 in four bytes
    "overlong-fullwidth": b"\xf0\x8f\xbc\xa1",  # U+FF21 in four bytes
    "surrogate-high": b"\xed\xa0\x80",
    "surrogate-low": b"\xed\xbf\xbf",
    "surrogate-pair": b"\xed\xa0\xbd\xed\xb8\x80",
    "above-10ffff": b"\xf4\x90\x80\x80",
    "f7-max": b"\xf7\xbf\xbf\xbf",
    "five-byte": b"\xf8\x88\x80\x80\x80",
    "six-byte": b"\xfc\x84\x80\x80\x80\x80",
    "fe-ff": b"\xfe\xff",
    "stray-continuation": b"\x80",
    "stray-continuations": b"\xbf\x80\xaa\xb5",
    "nul": b"\x00",
    "nuls": b"\x00\x00\x00",
    "noncharacter-fffe": b"\xef\xbf\xbe",
    "lead-then-many-continuations": b"\xe4" + b"\x80" * 5000,
    "two-byte-lead-then-continuations": b"\xc3" + b"\xa9" * 64,
    "lead-then-lead": b"\xe4\xe4\xb8\xad",
    "half-width-kana-truncated": b"\xef\xbd",
}

CONTEXTS = {
    "alone": b"%s",
    "latin": b"abc%sdef",
    "cjk-glued": "中文%s日本".encode(),
    "cjk-spaced": "中文 %s 日本".encode(),
    "cjk-char-split": "中%s文".encode(),
    "halfwidth-kana": "ｶﾀ%sﾞｶﾅ".encode(),
    "fullwidth": "Ｈｅ%sｌｌｏ".encode(),
    "start": b"%s\xe4\xb8\xad\xe6\x96\x87",
    "end": "東京%s".encode(),
    "repeated": "%s中%s文%s".encode(),
}


def boundaries(data, utf8_reader):
    return {s for s, _, _ in utf8_reader(data)} | {len(data)}


def check_offsets(stream, data, utf8_reader):
    edges = boundaries(data, utf8_reader)
    for entry in stream:
        start, end = entry[0], entry[1]
        assert 0 <= start <= end <= len(data), (entry, len(data))
        assert start in edges and end in edges, (entry, data[max(0, start - 4):end + 4])
        for tok in entry[2:]:
            assert isinstance(tok, str)


def tokens_of(stream):
    return [t for entry in stream for t in entry[2:]]


def insert_and_check(conn, data: bytes, as_text=True):
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS r USING fts5(body, tokenize='cjk_unicode61')")
    sql = "INSERT INTO r(body) VALUES (CAST(? AS TEXT))" if as_text else "INSERT INTO r(body) VALUES (?)"
    conn.execute(sql, (data,))
    rowid = conn.last_insert_rowid()
    conn.execute("INSERT INTO r(r) VALUES ('integrity-check')")
    return rowid


@pytest.mark.parametrize("bad", list(INVALID.values()), ids=list(INVALID))
def test_invalid_utf8_offsets_and_insert(conn, run_tokenizer, utf8_reader, bad):
    for ctx_name, ctx in CONTEXTS.items():
        data = ctx.replace(b"%s", bad)
        for mode, flags in MODES.items():
            stream = run_tokenizer("cjk_unicode61", [], data, flags)
            check_offsets(stream, data, utf8_reader)
            toks = tokens_of(stream)
            if ctx_name in ("cjk-glued", "cjk-spaced"):
                # the text around the bad bytes survives, nothing is glued across them
                assert "日本" in toks, (ctx_name, mode, toks)
                assert "文日" not in toks
                if ctx_name == "cjk-spaced" or bad[:1] >= b"\xc0" or bad[:1] < b"\x80":
                    assert "中文" in toks, (ctx_name, mode, toks)
            if ctx_name == "latin":
                assert any(t.startswith("abc") for t in toks) and any(t.endswith("def") for t in toks), toks
        for as_text in (True, False):
            rowid = insert_and_check(conn, data, as_text)
            if ctx_name in ("cjk-glued", "cjk-spaced"):
                hits = [r[0] for r in conn.execute("SELECT rowid FROM r WHERE r MATCH '\"日本\"'")]
                assert rowid in hits
                assert rowid not in [r[0] for r in conn.execute("SELECT rowid FROM r WHERE r MATCH '\"文日本\"'")]


def test_invalid_bytes_inside_a_cjk_run_break_the_run(run_tokenizer):
    # "中<bad>文": the phrase 中文 must not match; each side is still found alone.
    for bad in (b"\xe4\xb8", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\x80", b"\x00", b"\xff"):
        data = "中".encode() + bad + "文".encode()
        toks = tokens_of(run_tokenizer("cjk_unicode61", [], data))
        assert "中文" not in toks, bad
        assert "中" in toks and "文" in toks, (bad, toks)


CHUNKS = [
    "中", "文", "日本", "ｶ", "ﾞ", "ﾟ", "ﾊ", "Ｈ", "ｅ", "１", "。", "、", "「", " ", "\n", "a", "é", "😀",
    "\u3099", "한", "ﾡ", "𠀀", "\x1e",
]
byte_soup = st.lists(
    st.one_of(
        st.sampled_from([c.encode() for c in CHUNKS]),
        st.sampled_from([v for k, v in INVALID.items() if k != "lead-then-many-continuations"]),
        st.binary(min_size=1, max_size=6),
        # cut a valid multi-byte character anywhere
        st.tuples(st.sampled_from([c.encode() for c in CHUNKS if len(c.encode()) > 1]), st.integers(1, 3))
        .map(lambda t: t[0][: t[1]]),
    ),
    max_size=40,
).map(b"".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=byte_soup, mode=st.sampled_from(list(MODES)),
       args=st.sampled_from([[], ["remove_diacritics", "2"], ["tokenchars", "-\x1e"], ["separators", "中ｶ"],
                             ["categories", "L* N* Co Cc M* P* S* Z*"]]))
@example(data=b"", mode="document", args=[])
@example(data=b"\xef\xbd\xb6\xef\xbe", mode="document", args=[])
def test_random_bytes_give_valid_offsets(run_tokenizer, utf8_reader, data, mode, args):
    stream = run_tokenizer("cjk_unicode61", args, data, MODES[mode])
    check_offsets(stream, data, utf8_reader)
    # deterministic: the same input gives the same stream (FTS5 relies on it to delete rows)
    assert run_tokenizer("cjk_unicode61", args, data, MODES[mode]) == stream
    if mode == "query":
        assert all(len(entry) == 3 for entry in stream), "QUERY mode emits no colocated tokens"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(byte_soup, min_size=1, max_size=5))
def test_random_bytes_insert_update_delete_keep_index_consistent(docs):
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    try:
        conn.execute("CREATE VIRTUAL TABLE r USING fts5(a, b, tokenize='cjk_unicode61')")
        for d in docs:
            conn.execute("INSERT INTO r(a, b) VALUES (CAST(? AS TEXT), ?)", (d, d))
        conn.execute("INSERT INTO r(r) VALUES ('integrity-check')")
        conn.execute("UPDATE r SET a = CAST(? AS TEXT) WHERE rowid % 2 = 0", (b"".join(docs)[::-1],))
        conn.execute("DELETE FROM r WHERE rowid % 3 = 0")
        conn.execute("INSERT INTO r(r) VALUES ('integrity-check')")
        conn.execute("INSERT INTO r(r) VALUES ('rebuild')")
        conn.execute("INSERT INTO r(r) VALUES ('integrity-check')")
    finally:
        conn.close()


# ---- huge inputs ---------------------------------------------------------------------

MB = 1 << 20


def test_huge_latin_word(conn, run_tokenizer):
    data = b"x" * MB
    for flags in MODES.values():
        stream = run_tokenizer("cjk_unicode61", [], data, flags)
        assert stream == run_tokenizer("unicode61", [], data, flags)
        assert stream == [(0, MB, "x" * MB)]
    insert_and_check(conn, data)


def test_huge_fullwidth_word(run_tokenizer, conn):
    data = "Ｘ".encode() * (MB // 3)  # the folding path copies the segment
    stream = run_tokenizer("cjk_unicode61", [], data)
    assert stream == [(0, len(data), "x" * (MB // 3))]
    insert_and_check(conn, data)


def test_huge_cjk_run(conn, run_tokenizer):
    alpha = "大别山中文日本語東京国人天気晴れ項目管理修改服务한국어가나카타"
    text = "".join(alpha[(i * 7) % len(alpha)] for i in range(MB // 3))
    data = text.encode()
    n = len(text)
    for mode, flags in MODES.items():
        stream = run_tokenizer("cjk_unicode61", [], data, flags)
        assert len(stream) == n - 1
        assert all(entry[0] == 3 * i and entry[1] == 3 * i + 6 for i, entry in enumerate(stream))
        assert stream[0][2] == text[:2] and stream[-1][2] == text[-2:]
        if mode == "query" or mode == "prefix":
            assert len(stream[-1]) == 3
        else:
            assert stream[-1][3:] == (text[-1],)
    rowid = insert_and_check(conn, data)
    for q in (f'"{text[1000:1008]}"', f'"{text[-1]}"*', f'"{text[-3:]}"'):
        assert rowid in [r[0] for r in conn.execute("SELECT rowid FROM r WHERE r MATCH ?", (q,))]


def test_huge_halfwidth_kana_run_with_voiced_marks(conn, run_tokenizer, utf8_reader):
    unit = "ｶﾞｷﾞｸﾞﾊﾟｱ"  # folds to ガギグパア
    data = (unit * (MB // len(unit.encode()))).encode()
    stream = run_tokenizer("cjk_unicode61", [], data)
    assert stream[:4] == [(0, 12, "ガギ"), (6, 18, "ギグ"), (12, 24, "グパ"), (18, 27, "パア")]
    assert len(stream) == 5 * (MB // len(unit.encode())) - 1
    check_offsets(stream, data, utf8_reader)
    insert_and_check(conn, data)
    assert conn.execute("SELECT count(*) FROM r WHERE r MATCH '\"パアガ\"'").fetchall() == [(1,)]


def test_huge_mixed_line_without_newlines(conn, run_tokenizer, utf8_reader):
    unit = "修改youer服务 ＡＰＩ。東京 naïve 😀 ".encode()
    data = unit * 40000
    assert len(data) > MB
    stream = run_tokenizer("cjk_unicode61", [], data)
    one = run_tokenizer("cjk_unicode61", [], unit)
    assert [t[2:] for t in one] == [("修改", "改"), ("youer",), ("服务", "务"), ("api",), ("東京", "京"), ("naive",)]
    # the long input is the unit's token stream repeated, offsets shifted
    assert stream == [(s + k * len(unit), e + k * len(unit), *t) for k in range(40000) for s, e, *t in one]
    insert_and_check(conn, data)


def test_empty_input(conn, run_tokenizer):
    for flags in MODES.values():
        assert run_tokenizer("cjk_unicode61", [], b"", flags) == []
        assert run_tokenizer("cjk_unicode61", ["remove_diacritics", "2"], b"", flags) == []
    assert cjk_tokenizer.tokenize("") == []
    conn.execute("CREATE VIRTUAL TABLE e USING fts5(a, b, tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO e(a, b) VALUES ('', NULL)")
    conn.execute("INSERT INTO e(a, b) VALUES (NULL, '')")
    conn.execute("INSERT INTO e(a, b) VALUES (' 。、 ', x'')")
    conn.execute("INSERT INTO e(e) VALUES ('integrity-check')")
    assert conn.execute("SELECT count(*) FROM e WHERE e MATCH '\"中\"*'").fetchall() == [(0,)]
    # an empty or separator-only query is a syntax error or no match, never a crash
    for q in ('""', '"。"', '" "*'):
        try:
            assert conn.execute("SELECT count(*) FROM e WHERE e MATCH ?", (q,)).fetchall() == [(0,)]
        except apsw.SQLError:
            pass


# ---- arguments -----------------------------------------------------------------------

BAD_ARGS = [
    (["remove_diacritics", "3"], "remove_diacritics"),
    (["remove_diacritics", ""], "remove_diacritics"),
    (["remove_diacritics", "11"], "remove_diacritics"),
    (["remove_diacritics"], "remove_diacritics"),
    (["tokenchars"], "tokenchars"),
    (["foo", "bar"], "foo"),
    (["categories", "Xx"], "Xx"),
    (["categories", "L* Q*"], "Q*"),
]


def _ddl(args, table="t"):
    quoted = " ".join("'" + a.replace("'", "''") + "'" for a in args)
    return f"CREATE VIRTUAL TABLE {table} USING fts5(body, tokenize=\"cjk_unicode61 {quoted}\")"


@pytest.mark.parametrize("args,culprit", BAD_ARGS, ids=[" ".join(a) for a, _ in BAD_ARGS])
def test_bad_arguments_fail_table_creation_with_a_clear_message(conn, args, culprit):
    with pytest.raises(apsw.SQLError):
        conn.execute(_ddl(args))
    assert not conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 't'").fetchall()[0][0]
    problem = cjk_tokenizer._native.tokenizer_args_error(args)
    assert problem and problem.startswith("cjk_unicode61:"), problem
    assert culprit in problem
    with pytest.raises(ValueError) as info:
        cjk_tokenizer.tokenize("中文 text", args=args)
    assert culprit in str(info.value)


@pytest.mark.parametrize("args", [[], ["remove_diacritics", "0"], ["remove_diacritics", "2"],
                                  ["tokenchars", "-_"], ["separators", "x中"], ["categories", "L* N* Co"],
                                  ["remove_diacritics", "2", "tokenchars", "'", "categories", "L* N*"]])
def test_good_arguments_create_tables(conn, args):
    assert cjk_tokenizer._native.tokenizer_args_error(args) is None
    conn.execute(_ddl(args))
    conn.execute("INSERT INTO t(body) VALUES ('大别山 hello-world')")
    assert conn.execute("SELECT count(*) FROM t WHERE t MATCH '\"别山\"'").fetchall() == [(1,)]


def test_tokenize_rejects_a_bad_mode():
    with pytest.raises(ValueError):
        cjk_tokenizer.tokenize("中文", mode="bogus")


@pytest.mark.parametrize("text", [None, 123, 4.5, ["中文"]])
def test_tokenize_takes_text_only(text):
    # never the tokens of str(text): tokenize(None) is not the word "none"
    with pytest.raises(TypeError, match=f"text must be a str or UTF-8 bytes, not {type(text).__name__}"):
        cjk_tokenizer.tokenize(text)
    assert cjk_tokenizer.tokenize(b"\xe4\xb8\xad\xe6\x96\x87") == cjk_tokenizer.tokenize("中文")


def test_tokenize_args_are_a_list_not_one_string():
    with pytest.raises(TypeError, match="args must be a list"):
        cjk_tokenizer.tokenize("中文", args="unigrams 1")


# ---- xToken return codes (through a real fts5 API v2 host: libsqlite3 via ctypes) -------

_XTOKEN_SCRIPT = textwrap.dedent(r"""
    import ctypes, json, sys
    from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int, c_void_p)

    libname, ext, cases = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
    lib = ctypes.CDLL(libname)
    lib.sqlite3_open.argtypes = [c_char_p, POINTER(c_void_p)]
    lib.sqlite3_enable_load_extension.argtypes = [c_void_p, c_int]
    lib.sqlite3_load_extension.argtypes = [c_void_p, c_char_p, c_char_p, POINTER(c_char_p)]
    lib.sqlite3_prepare_v2.argtypes = [c_void_p, c_char_p, c_int, POINTER(c_void_p), c_void_p]
    lib.sqlite3_bind_pointer.argtypes = [c_void_p, c_int, c_void_p, c_char_p, c_void_p]
    lib.sqlite3_step.argtypes = [c_void_p]
    lib.sqlite3_finalize.argtypes = [c_void_p]
    lib.sqlite3_close.argtypes = [c_void_p]

    XTOKEN = CFUNCTYPE(c_int, c_void_p, c_int, c_void_p, c_int, c_int, c_int)
    XCREATE = CFUNCTYPE(c_int, c_void_p, POINTER(c_char_p), c_int, POINTER(c_void_p))
    XDELETE = CFUNCTYPE(None, c_void_p)
    XTOKENIZE = CFUNCTYPE(c_int, c_void_p, c_void_p, c_int, c_void_p, c_int, XTOKEN)

    class Tokenizer(Structure):
        _fields_ = [("xCreate", XCREATE), ("xDelete", XDELETE), ("xTokenize", XTOKENIZE)]

    XFIND = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(c_void_p), POINTER(Tokenizer))

    class Api(Structure):
        _fields_ = [("iVersion", c_int), ("xCreateTokenizer", c_void_p), ("xFindTokenizer", XFIND),
                    ("xCreateFunction", c_void_p)]

    db = c_void_p()
    assert lib.sqlite3_open(b":memory:", byref(db)) == 0
    lib.sqlite3_enable_load_extension(db, 1)
    err = c_char_p()
    rc = lib.sqlite3_load_extension(db, ext.encode(), b"sqlite3_cjkunicode_init", byref(err))
    assert rc == 0, err.value
    p_api = c_void_p()
    stmt = c_void_p()
    assert lib.sqlite3_prepare_v2(db, b"SELECT fts5(?1)", -1, byref(stmt), None) == 0
    lib.sqlite3_bind_pointer(stmt, 1, ctypes.addressof(p_api), b"fts5_api_ptr", None)
    lib.sqlite3_step(stmt)
    lib.sqlite3_finalize(stmt)
    api = ctypes.cast(p_api, POINTER(Api)).contents
    ud, tok = c_void_p(), Tokenizer()
    assert api.xFindTokenizer(p_api, b"cjk_unicode61", byref(ud), byref(tok)) == 0

    out = {"fts5_api_version": api.iVersion, "results": []}
    for case in cases:
        args = [a.encode() for a in case["args"]]
        argv = (c_char_p * max(1, len(args)))(*args)
        inst = c_void_p()
        assert tok.xCreate(ud, argv, len(args), byref(inst)) == 0
        data = bytes.fromhex(case["data"])
        buf = ctypes.create_string_buffer(data, max(1, len(data)))
        calls = []

        def cb(ctx, tflags, ptok, ntok, start, end, calls=calls, case=case):
            calls.append([ctypes.string_at(ptok, ntok).decode("utf-8", "replace"), start, end, tflags])
            return case["code"] if len(calls) >= case["stop_after"] else 0

        rc = tok.xTokenize(inst, None, case["flags"], ctypes.cast(buf, c_void_p), len(data), XTOKEN(cb))
        out["results"].append({"rc": rc, "calls": calls})
        tok.xDelete(inst)
    lib.sqlite3_close(db)
    print(json.dumps(out))
""")

XTOKEN_TEXTS = [
    "hello world foo bar baz",  # all of it through the wrapped unicode61
    "大别山项目管理",  # bigrams and the run-final unigram
    "修改youer服务 abc 日本語 ｶﾞｲﾄﾞ",  # both kinds interleaved
    "Ｈｅｌｌｏ ｗｏｒｌｄ ｘｙｚ",  # the folding path
    "甲乙。乙丙。丙丁",  # gap tokens
]
SQLITE_OK, SQLITE_ERROR, SQLITE_ABORT, SQLITE_NOMEM, SQLITE_DONE = 0, 1, 4, 7, 101


def _libsqlite3():
    name = ctypes.util.find_library("sqlite3")
    if not name:
        if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
            pytest.fail("libsqlite3 (an fts5 API v2 host) is missing and CJK_REQUIRE_ALL_HOSTS is set")
        pytest.skip("no libsqlite3 shared library on this machine")
    return name


def _run_xtoken_cases(cases):
    proc = subprocess.run(
        [sys.executable, "-c", _XTOKEN_SCRIPT, _libsqlite3(), cjk_tokenizer.loadable_path()],
        input=json.dumps(cases), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _to_apsw_shape(calls):
    out = []
    for tok, start, end, tflags in calls:
        if tflags & apsw.FTS5_TOKEN_COLOCATED:
            out[-1] = out[-1] + (tok,)
        else:
            out.append((start, end, tok))
    return out


def test_xtoken_return_codes_stop_tokenizing_and_propagate(run_tokenizer):
    flags_list = [MODES["document"], MODES["query"]]
    full_cases = [{"args": [], "data": t.encode().hex(), "flags": f, "code": SQLITE_OK, "stop_after": 1}
                  for t in XTOKEN_TEXTS for f in flags_list]
    full = _run_xtoken_cases(full_cases)
    # The legacy (fts5 API v2) host tokenizes exactly as APSW's v3 host does.
    assert full["fts5_api_version"] == 2
    counts = []
    for case, res in zip(full_cases, full["results"]):
        assert res["rc"] == SQLITE_OK
        data = bytes.fromhex(case["data"])
        assert _to_apsw_shape(res["calls"]) == run_tokenizer("cjk_unicode61", [], data, case["flags"])
        counts.append(len(res["calls"]))

    stop_cases = []
    for (case, n) in zip(full_cases, counts):
        for k in range(1, n + 1):
            for code in (SQLITE_DONE, SQLITE_ERROR, SQLITE_NOMEM, SQLITE_ABORT):
                stop_cases.append(dict(case, code=code, stop_after=k))
    stopped = _run_xtoken_cases(stop_cases)
    for case, res in zip(stop_cases, stopped["results"]):
        what = (bytes.fromhex(case["data"]).decode(), case["flags"], case["code"], case["stop_after"])
        # SQLite's own tokenizers report a stop asked for with SQLITE_DONE as
        # SQLITE_OK (FTS5 callers such as highlight() rely on it).
        want = SQLITE_OK if case["code"] == SQLITE_DONE else case["code"]
        assert res["rc"] == want, what
        assert len(res["calls"]) == case["stop_after"], f"xToken called again after returning non-OK: {what}"


def test_xtoken_v2_host_passes_arguments_through(run_tokenizer):
    args = ["remove_diacritics", "0", "tokenchars", "-", "separators", "的"]
    text = "Crème-brûlée 我的书 ÉTÉ"
    cases = [{"args": args, "data": text.encode().hex(), "flags": MODES["document"], "code": 0, "stop_after": 1}]
    res = _run_xtoken_cases(cases)["results"][0]
    assert res["rc"] == SQLITE_OK
    got = _to_apsw_shape(res["calls"])
    assert got == run_tokenizer("cjk_unicode61", args, text.encode())
    assert [t[2] for t in got] == ["crème-brûlée", "我", "书", "été"]


# ---- threads ---------------------------------------------------------------------------

def test_tokenizing_in_many_threads_at_once():
    import threading

    texts = [("修改youer服务 ＡＰＩ。東京 naïve ｶﾞｲﾄﾞ " * 200 + str(i)).encode() for i in range(8)]
    ref_conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    ref_tok = ref_conn.fts5_tokenizer("cjk_unicode61", ["remove_diacritics", "2"])
    want = [ref_tok(t, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=True)
            for t in texts]
    del ref_tok
    ref_conn.close()
    errors = []

    def work(i):
        try:
            conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
            tok = conn.fts5_tokenizer("cjk_unicode61", ["remove_diacritics", "2"])
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='cjk_unicode61 remove_diacritics 2')")
            for _ in range(20):
                got = tok(texts[i], apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=True)
                if got != want[i]:
                    errors.append((i, "stream differs"))
                    break
                conn.execute("INSERT INTO t(body) VALUES (?)", (texts[i].decode(),))
            conn.execute("INSERT INTO t(t) VALUES ('integrity-check')")
            del tok
            conn.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append((i, repr(exc)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize("text", [b"\xe5\xa4\xa7\xe5\xb1\xb1\x80", b"\xe5\xa4\xa7\xe5\xb1\xb1\xbf\x80 x",
                                  b"\xf0\xa0\x80\x80\xe5\xb1\xb1\x80",
                                  b"\xe5\xa4\xa7\xe5\xb1\xb1\xef\xb8\x8f\x81"])  # 大山 VS16, stray byte
def test_a_stray_byte_after_a_cjk_letter_leaves_the_letter_indexed(conn, text):
    # Python reads 大山\ufffd: the letter before the stray byte is there, and the index finds it
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO t(rowid, a) VALUES (1, CAST(? AS TEXT))", (text,))
    readable = text.decode("utf-8", "replace")
    assert "山" in readable
    assert conn.execute("SELECT rowid FROM t WHERE t MATCH '\"山\"*'").fetchall() == [(1,)]
    if "大山" in readable:
        assert conn.execute("SELECT rowid FROM t WHERE t MATCH '\"大山\"'").fetchall() == [(1,)]


def test_a_selector_before_a_stray_byte_stays_with_its_letter(conn):
    # the selector swallowed the stray byte, so the letter's token ended before it
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO t(rowid, a) VALUES (1, CAST(? AS TEXT)), (2, ?)",
                 (b"\xe5\xb1\xb1\xef\xb8\x8f\x81", "\u5c71\ufe0f\ufffd"))
    got = conn.execute("SELECT rowid, cjk_match(t, 'a', 40, '[', ']') FROM t WHERE t MATCH '\"\u5c71\"'").fetchall()
    spans = {rowid: (json.loads(res)["start"], json.loads(res)["end"]) for rowid, res in got}
    assert spans == {1: (0, 2), 2: (0, 2)}  # the letter with its selector, as Python reads both rows
