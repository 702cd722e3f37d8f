"""One snippet rule on every route: the same row and query give the same
snippet and the same highlight whether the C auxiliary function ``cjk_match``
builds it (cjk route, raw through APSW or through ``Archive.search``), or the
Python-checked routes do (scan, unicode61, trigram, an archive without the
extension), or ``session_search`` discovery shows it.
"""
from __future__ import annotations

import warnings

import pytest

from cjk_tokenizer import Archive
from cjk_tokenizer.errors import QueryError
from cjk_tokenizer.query import parse
from cjk_tokenizer.router import plan
from cjk_tokenizer.compiler import table
from cjk_tokenizer.search import SNIPPET_CHARS, searched_columns
from cjk_tokenizer.snippet import ELLIPSIS

OPEN, CLOSE = "⟦", "⟧"

LONG = "这是一个很长的句子，用来填充上下文。" * 12
CASES = [
    # (text, query)
    ("我们讨论了很多事情。" * 6 + "这个项目的部署脚本在 settings.yaml 里。Edit settings.yaml and rerun 部署 today.\n"
     + "后面还有很多别的内容，和项目无关。" * 5, "项目"),
    ("Edit settings.yaml and rerun the deploy. " * 3 + "Then check 部署 logs in settings.yaml again. " * 4,
     "部署"),
    ("Edit settings.yaml and rerun the deploy. " * 6, "settings"),
    ("e\u0301" * 90 + " target" + "\u0301" * 3 + " z\u0308" * 60, "target"),
    ("a\u0301b\u0302c\u0303 " * 40 + "needle" + " o\u0308" * 40, "needle"),
    ("🎉👨\u200d👩\u200d👧 " * 30 + "部署成功 🎉🎉 " + "👍🏽 " * 40, "部署成功"),
    (LONG + "数据库配置文件有错误，请修改。" + LONG, "错误"),
    ("项目" + LONG * 2, "项目"),  # match at the start
    (LONG * 2 + "最后是项目", "项目"),  # match at the end
    ("部署" + "失败请检查日志并回滚" * 9 + "。" + LONG, "部署" + "失败请检查日志并回滚" * 9),  # longer than the budget
    ("项目 one. " + "filler text here. " * 20 + "项目 two 项目 three 项目 four. " + "tail words. " * 20, "项目"),
    ("  \n\n  leading space and 部署 then trailing  \n  ", "部署"),
    ("short 部署 text", "部署"),
    ("line one\nline two with needle inside\nline three\n" * 8, "needle"),
    ("Ｈｅｌｌｏ ｗｏｒｌｄ " * 20 + "then hello again" + " more words" * 20, "hello"),
    ("First sentence here! Second one? Third; 第四句。" * 6 + "the word zebra lives here." + " x" * 80, "zebra"),
    ("word" * 60 + " 部署 " + "word" * 60, "部署"),
    ("日志" + "，" * 3 + "配置文件很长很长" * 20 + "部署和日志都在这里。" + "尾巴" * 40, "部署 日志"),
    # a term of an OR branch the row does not match shows as FTS5 reports it: not at all
    ("beta first, then alpha", "alpha OR beta gamma"),
    ("部署" + "很长的说明文字" * 12 + "最后失败了", "失败 OR (部署 回滚)"),
    ("gamma and delta then beta, later alpha", "alpha OR (beta (gamma OR epsilon))"),
    ("gamma and then beta, later alpha", "alpha OR (beta -gamma)"),
]
SIZES = (40, 61, SNIPPET_CHARS)


def _build(path, extension: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ar = Archive(path, extension=extension)
    ids = []
    for k, (text, _) in enumerate(CASES):
        sid = ar.add_session(f"s{k}")
        ids.append((sid, ar.add_message(sid, "user", text)))
    return ar, ids


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    base = tmp_path_factory.mktemp("snippet_diff")
    with_ext, ids = _build(base / "ext.db", True)
    without, ids2 = _build(base / "noext.db", False)
    assert ids == ids2
    yield with_ext, without, ids
    with_ext.close()
    without.close()


def unmark(marked: str) -> tuple[str, tuple[int, int] | None]:
    """The snippet without the markers, and the first marked span in it."""
    k = marked.find(OPEN)
    plain = marked.replace(OPEN, "").replace(CLOSE, "")
    if k < 0:
        return plain, None
    return plain, (k, marked.index(CLOSE) - 1)


def raw_cjk_match(ar, query: str, message_id: int, size: int):
    """``cjk_match`` itself, through APSW, with markers: its snippet and first highlight."""
    t = table("cjk")
    p = plan(parse(query), ar.indexes.live(), columns=searched_columns(False), route="cjk")
    row = ar.conn.execute(
        f"SELECT json_extract(cjk_match({t}, 'content,reasoning,tool_name,tool_calls', ?, ?, ?, ?), '$.snippet') "
        f"FROM {t} WHERE {t} MATCH ? AND rowid = ?",
        (size - 2, OPEN, CLOSE, ELLIPSIS, p.match, message_id)).fetchone()
    assert row is not None, f"{query!r} does not match message {message_id} on the cjk index"
    return unmark(row[0])


def route_snippets(ar, query, sid, size, routes):
    out = {}
    for route in routes:
        try:
            hits = ar.search(query, session_id=sid, route=route, snippet_chars=size)
        except QueryError:
            continue  # this route cannot express the query
        assert len(hits) == 1, (route, query)
        out[route] = (hits[0].snippet, hits[0].highlight)
    return out


@pytest.mark.parametrize("size", SIZES)
def test_every_route_shows_the_same_snippet(archives, size):
    with_ext, without, ids = archives
    failures = []
    for (text, query), (sid, mid) in zip(CASES, ids):
        want = raw_cjk_match(with_ext, query, mid, size)
        got = route_snippets(with_ext, query, sid, size, ("cjk", "scan", "unicode61", "trigram"))
        assert "scan" in got and "cjk" in got
        got.update({f"no extension/{k}": v for k, v in route_snippets(without, query, sid, size, (None,)).items()})
        for route, value in got.items():
            if value != want:
                failures.append(f"{query!r} size={size} {route}: {value!r}\n    cjk_match: {want!r}")
    assert not failures, "\n".join(failures)


def test_session_search_discovery_shows_the_same_snippet(archives):
    with_ext, without, ids = archives
    failures = []
    for (text, query), (sid, mid) in zip(CASES, ids):
        want = raw_cjk_match(with_ext, query, mid, SNIPPET_CHARS)
        for name, ar in (("extension", with_ext), ("no extension", without)):
            res = ar.session_search(query=query, session_id=sid)
            hit = res["sessions"][0]["hit"]
            assert hit["message_id"] == mid
            marks = hit["marks"] or [OPEN, CLOSE]
            got = unmark(hit["snippet"].replace(marks[0], OPEN).replace(marks[1], CLOSE))
            if got != want:
                failures.append(f"{query!r} {name}: {got!r}\n    cjk_match: {want!r}")
    assert not failures, "\n".join(failures)


def test_a_term_of_an_or_branch_the_row_misses_marks_no_column(tmp_path):
    """matched_in names the columns of the parts of the query the row matches, on
    every route: beta occurs in tool_name, but the row matches alpha alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with Archive(tmp_path / "a.db") as ar:
            ar.add_message("s", "assistant", "beta first, then alpha", tool_name="beta")
        with Archive(tmp_path / "a.db") as ar, Archive(tmp_path / "a.db", extension=False) as bare:
            got = {route: [(h.matched_in, h.snippet[h.highlight[0]:h.highlight[1]])
                           for h in ar.search("alpha OR beta gamma", route=route)]
                   for route in ("cjk", "scan", "unicode61")}
            got["no extension"] = [(h.matched_in, h.snippet[h.highlight[0]:h.highlight[1]])
                                   for h in bare.search("alpha OR beta gamma")]
    assert got == {k: [(["content"], "alpha")] for k in got}
