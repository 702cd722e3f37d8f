"""The Datasette plugin, through Datasette's own test client and CLI.

Needs Datasette and this package installed in the running Python (the plugin
is found through its entry point); the search tests also need a sqlite3 that
loads extensions (CI: the ``plugins`` stage, Debian's python3).  On a Python
without extension loading the plugin must say so in one line at start-up.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _plugin_hosts as hosts  # noqa: E402

TOOL = "Datasette"


@pytest.fixture(autouse=True)
def _plugin_installed():
    hosts.require_plugin("datasette", "datasette")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    from cjk_tokenizer import Archive

    path = tmp_path_factory.mktemp("ds") / "archive.db"
    with Archive(path) as ar:
        s1 = ar.add_session(title="部署")
        ids = {
            "said": ar.add_message(s1, "user", "部署失败了，怎么回滚？"),
            "thought": ar.add_message(s1, "assistant", "先看日志", reasoning="用户想部署大模型"),
            "end": ar.add_message(s1, "assistant", "这个改动很大"),
            "inside": ar.add_message(s1, "assistant", "大别山项目的进度"),
            "tool": ar.add_message(s1, "assistant", "", tool_name="shell",
                                   tool_calls=json.dumps([{"cmd": "kubectl 部署 <prod>"}], ensure_ascii=False)),
        }
        s2 = ar.add_session(title="other")
        ids["other"] = ar.add_message(s2, "user", "nothing relevant here")
        ids["big2"] = ar.add_message(s2, "user", "伟大的工程")
        # "abc别" needs the prefix form "abc 别"*, which also matches abc特别: rows are checked
        ids["glued"] = ar.add_message(s2, "user", "修改abc别人的配置")
        ids["near_miss"] = ar.add_message(s2, "user", "修改abc特别")
    return str(path), ids


def _get(paths, *urls):
    from datasette.app import Datasette

    async def go():
        ds = Datasette([str(p) for p in paths])
        return [await ds.client.get(u) for u in urls]

    return asyncio.run(go())


@pytest.fixture
def ask(archive):
    """``ask(*paths)``: Datasette's responses for URL paths under the archive database."""
    hosts.require_loading()
    return lambda *paths: _get([archive[0]], *(f"/archive/{p}" for p in paths))


def _ids(resp):
    assert resp.status_code == 200, resp.text[:500]
    return sorted(r["id"] for r in resp.json())


def test_archive_search_said_and_tools_not_reasoning(archive, ask):
    ids = archive[1]
    said, all_cols, only_reasoning, both, column_pair, none = ask(
        "messages.json?_search=部署&_shape=array",
        "messages.json?_search=部署&_reasoning=1&_shape=array",
        "messages.json?_search_reasoning=部署&_shape=array",
        # searches given together must all match, as in Datasette's own search
        "messages.json?_search=日志&_search_reasoning=部署&_shape=array",
        "messages.json?_search_content=日志&_search_reasoning=大&_shape=array",
        "messages.json?_search=大&_search_reasoning=部署&_shape=array",
    )
    assert _ids(said) == sorted([ids["said"], ids["tool"]])
    assert _ids(all_cols) == sorted([ids["said"], ids["tool"], ids["thought"]])
    assert _ids(only_reasoning) == [ids["thought"]]
    assert _ids(both) == [ids["thought"]] and _ids(column_pair) == [ids["thought"]]
    assert _ids(none) == []  # 大 is said elsewhere, 部署 thought here: no message has both


def test_archive_one_character_finds_every_occurrence(archive, ask):
    ids = archive[1]
    (resp,) = ask(
        "messages.json?_search=大&_shape=array")
    # run-final (很大), run-initial (大别山), mid-run (伟大的); not the reasoning-only one
    assert _ids(resp) == sorted([ids["end"], ids["inside"], ids["big2"]])


def test_archive_query_language_and_bad_query(archive, ask):
    ids = archive[1]
    phrase, negated, bad, bad_page = ask(
        "messages.json?_search=%22大别山%22&_shape=array",
        "messages.json?_search=大 -伟大&_shape=array",
        "messages.json?_search=%22%22&_shape=array",
        "messages?_search=%22%22",
    )
    assert _ids(phrase) == [ids["inside"]]
    assert _ids(negated) == sorted([ids["end"], ids["inside"]])
    # a query with nothing to search: no rows, and the page says why (no traceback)
    assert bad.status_code == 200 and bad.json() == []
    assert bad_page.status_code == 200 and "nothing to search for in" in bad_page.text


def test_archive_html_has_search_box_and_highlighted_snippet(archive, ask):
    ids = archive[1]
    page, row, by_role, one_per_page = ask(
        "messages?_search=部署", f"messages/{ids['said']}", "messages?_search=大&_sort_desc=role",
        "messages?_search=大&_size=1&_sort_desc=id")
    assert page.status_code == 200
    assert 'name="_search"' in page.text
    cells = re.findall(r'<td class="col-content[^"]*">(.*?)</td>', page.text, re.S)
    assert "<mark>部署</mark>失败了，怎么回滚？" in cells
    # a match in tool_calls is shown from that column, escaped, the match marked
    assert any("tool_calls:" in c and "kubectl <mark>部署</mark> &lt;prod&gt;" in c for c in cells), cells
    # the row page of the same message (a later request) shows the plain text
    assert "<mark>" not in row.text and "部署失败了，怎么回滚？" in row.text
    # snippets come for every row whatever the page's order or size
    cells = re.findall(r'<td class="col-content[^"]*">(.*?)</td>', by_role.text, re.S)
    assert len(cells) == 3 and all(re.search("<mark>[^<]*大[^<]*</mark>", c) for c in cells), cells
    cells = re.findall(r'<td class="col-content[^"]*">(.*?)</td>', one_per_page.text, re.S)
    assert cells == ["伟<mark>大的</mark>工程"] or cells == ["伟<mark>大</mark>的工程"], cells


def test_archive_canned_query_groups_by_session(archive, ask):
    ids = archive[1]
    hits, empty, html = ask(
        "cjk_search.json?q=部署&reasoning=&_shape=array",
        "cjk_search.json?q=&reasoning=&_shape=array",
        "cjk_search?q=大&reasoning=1",
    )
    assert hits.status_code == 200, hits.text[:500]
    rows = hits.json()
    assert sorted(r["message_id"] for r in rows) == sorted([ids["said"], ids["tool"]])
    assert {r["hits_in_session"] for r in rows} == {2} and {r["total_matches"] for r in rows} == {2}
    said = next(r for r in rows if r["message_id"] == ids["said"])
    assert said["matched_in"] == "content" and said["cjk_snippet"] == "\x02部署\x03失败了，怎么回滚？"
    assert empty.status_code == 200 and empty.json() == []
    assert html.status_code == 200
    snippets = re.findall(r'<td class="col-cjk_snippet">(.*?)</td>', html.text, re.S)
    # every hit, reasoning included (reasoning=1 asked for it), with a marked 大.  On SQLite
    # before 3.45 cjk_match may mark the bigram around a lone one-character hit (csrc/cjk_aux.h).
    assert len(snippets) == 4, snippets
    plain = sorted(s.replace("<mark>", "").replace("</mark>", "") for s in snippets)
    assert plain == sorted(["伟大的工程", "用户想部署大模型", "这个改动很大", "大别山项目的进度"])
    assert all(re.search("<mark>[^<]*大[^<]*</mark>", s) for s in snippets), snippets


def test_the_canned_query_says_when_more_match_than_it_shows(tmp_path):
    from cjk_tokenizer import Archive
    from cjk_tokenizer.plugins.datasette import CANNED_HITS

    hosts.require_loading()
    path = tmp_path / "busy.db"
    with Archive(path) as ar:
        for sid in "abc":
            ar.add_messages(sid, [{"role": "user", "content": f"deploy 第{i}次部署"} for i in range(150)])
    resp, = _get([path], "/busy/cjk_search.json?q=deploy&reasoning=&_shape=array&_size=max")
    rows = resp.json()
    assert len(rows) == CANNED_HITS and {r["total_matches"] for r in rows} == {450}
    shown = {sid: sum(r["session_id"] == sid for r in rows) for sid in {r["session_id"] for r in rows}}
    assert all(r["hits_in_session"] == shown[r["session_id"]] for r in rows)


def test_the_canned_query_ranks_as_search_does(tmp_path):
    # it ordered by FTS5's rank, every column weighted alike: a hit only in reasoning came first
    from cjk_tokenizer import Archive

    hosts.require_loading()
    path = tmp_path / "weights.db"
    with Archive(path) as ar:
        thought = ar.add_message("a", "assistant", "ok", reasoning="部署")
        said = ar.add_message("b", "user", "部署 " + "填充 " * 8)
        want = [h.message_id for h in ar.search("部署", include_reasoning=True)]
    assert want == [said, thought]
    resp, = _get([path], "/weights/cjk_search.json?q=部署&reasoning=1&_shape=array")
    assert [r["message_id"] for r in resp.json()] == want


def test_the_canned_query_puts_sessions_whose_best_hits_tie_newest_first(tmp_path):
    # equal best scores put the sessions in the order of their ids
    from cjk_tokenizer import Archive

    hosts.require_loading()
    path = tmp_path / "ties.db"
    with Archive(path) as ar:
        for sid in ("a-old", "m-mid", "z-new"):
            ar.add_message(sid, "user", "部署 完成")
        want = [h.session_id for h in ar.search("部署")]
    assert want == ["z-new", "m-mid", "a-old"]
    resp, = _get([path], "/ties/cjk_search.json?q=部署&reasoning=&_shape=array")
    assert [r["session_id"] for r in resp.json()] == want


def test_a_search_column_that_does_not_exist_is_said_not_ignored(archive, ask):
    # a misspelt _search_<column> searched nothing and showed every row
    resp, = ask("messages.json?_search_contents=部署&_shape=array")
    assert resp.status_code == 200 and resp.json() == []
    page, = ask("messages?_search_contents=部署")
    assert "cannot search by &#39;_search_contents&#39;" in page.text or "cannot search by '_search_contents'" in page.text


def test_archive_terms_that_need_a_row_check(archive, ask):
    ids = archive[1]
    table, canned, bad = ask(
        "messages.json?_search=abc别&_shape=array",
        "cjk_search.json?q=abc别&reasoning=&_shape=array",
        "cjk_search.json?q=*&reasoning=&_shape=array",
    )
    assert _ids(table) == [ids["glued"]]
    assert [r["message_id"] for r in canned.json()] == [ids["glued"]]
    # a query that cannot run says why, in one line, instead of returning nothing
    assert bad.status_code == 400
    assert "cjk_search: nothing to search for in '*'" in bad.json()["error"]


def test_archive_without_cjk_index_searches_other_routes(tmp_path):
    hosts.require_loading()
    import warnings

    from cjk_tokenizer import Archive

    path = tmp_path / "nocjk.db"
    with warnings.catch_warnings(), Archive(path, extension=False) as ar:
        warnings.simplefilter("ignore")
        s = ar.add_session()
        said = ar.add_message(s, "user", "伟大的工程")
        ar.add_message(s, "assistant", "ok", reasoning="大模型")
        deploy = ar.add_message(s, "user", "deploy the 部署脚本")
    one, words, canned = _get([path], "/nocjk/messages.json?_search=大&_shape=array",
                              "/nocjk/messages.json?_search=deploy 部署&_shape=array", "/nocjk")
    assert _ids(one) == [said]
    assert _ids(words) == [deploy]
    assert "cjk_search" not in canned.text  # the canned query needs the cjk index


@pytest.mark.parametrize("extension", [False, True])
def test_an_archive_that_folds_variants_folds_on_every_route(tmp_path, extension):
    """A query in other Han variants finds what the archive's own search finds:
    on the fallback routes (no cjk index) and in the row checks of the cjk route."""
    hosts.require_loading()
    import warnings

    from cjk_tokenizer import Archive

    path = tmp_path / "folds.db"
    with warnings.catch_warnings(), Archive(path, extension=extension, fold_variants=True) as ar:
        warnings.simplefilter("ignore")
        s = ar.add_session()
        plan = ar.add_message(s, "user", "项目管理 deploy")
        glued = ar.add_message(s, "user", "修改abc别人的配置")
        ar.add_message(s, "user", "修改abc特别")
        expected = {q: [h.message_id for h in ar.search(q)] for q in ("項目", "項目 deploy", "abc別")}
    assert expected == {"項目": [plan], "項目 deploy": [plan], "abc別": [glued]}
    urls = [f"/folds/messages.json?_search={q}&_shape=array" for q in expected]
    if extension:
        urls.append("/folds/cjk_search.json?q=abc別&reasoning=&_shape=array")
    got = _get([path], *urls)
    for q, resp in zip(expected, got):
        assert _ids(resp) == expected[q], q
    if extension:
        assert [r["message_id"] for r in got[-1].json()] == [glued]


def test_escape_fts_matches_datasette_except_one_cjk_character():
    from datasette.utils import escape_fts as theirs

    from cjk_tokenizer.plugins.datasette import escape_fts as ours

    for q in ["hello world", '"a phrase" word', 'unbalanced "quote', "项目 管理", "a-b c:d", "大别", "x*", ""]:
        assert ours(q) == theirs(q), q
    assert ours("大") == '"大"*'
    assert ours('项目 "大" 山') == '"项目" "大"* "山"*'
    # one character with what the tokenizer drops around it is that one character's phrase
    assert ours("大*") == ours("「大」") == ours("大。") == ours("^大") == '"大"*'
    assert ours("大学*") == '"大学*"'
    # spellings the tokenizer reads as one character: half-width with its voiced mark, a decomposed
    # voiced mark, a letter with its variation selector (they found nothing)
    assert ours("ｶﾞ") == ours("カ\u3099") == '"ガ"*'
    assert ours("辻\U000e0101") == '"辻"*'
    # a quoted phrase across a line break stays one string, as Datasette quotes it, and a prefix stays one
    assert ours('"大\n"') == '"大"*'
    assert ours('"\t山*\n') == theirs('"\t山*\n')


def test_plain_fts_table_one_character_and_words(tmp_path):
    hosts.require_loading()
    import cjk_tokenizer

    path = tmp_path / "docs.db"
    conn = cjk_tokenizer.load(sqlite3.connect(path))
    conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute('CREATE VIRTUAL TABLE docs_fts USING fts5(body, content="docs", content_rowid="id", '
                 "tokenize='cjk_unicode61')")
    rows = [(1, "大别山项目"), (2, "这个很大"), (3, "伟大的工程"), (4, "hello world"), (5, "项目管理")]
    conn.executemany("INSERT INTO docs VALUES (?, ?)", rows)
    conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')")
    conn.commit()
    conn.close()
    one, two, word = _get([path], "/docs/docs.json?_search=大&_shape=array",
                          "/docs/docs.json?_search=项目&_shape=array", "/docs/docs.json?_search=hello&_shape=array")
    assert _ids(one) == [1, 2, 3]
    assert _ids(_get([path], "/docs/docs.json?_search=大*&_shape=array")[0]) == [1, 2, 3]
    assert _ids(two) == [1, 5]
    assert _ids(word) == [4]


def test_no_extension_loading_says_so_in_one_line(tmp_path):
    if hosts.CAN_LOAD:
        pytest.skip("this Python's sqlite3 loads extensions: nothing to say")
    path = tmp_path / "plain.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    res = hosts.run_tool("datasette", ["--get", "/plain/t.json", str(path)], tmp_path)
    assert res.returncode == 0, res.stderr
    lines = hosts.notice_lines(res.stderr, TOOL)
    assert len(lines) == 1, res.stderr
    assert "built without extension loading" in lines[0] and hosts.names_this_python(lines[0]), lines[0]
