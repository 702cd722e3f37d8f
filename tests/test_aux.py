"""cjk_match(): the reasoning-aware FTS5 auxiliary function (csrc/cjk_aux.c).

Contract (csrc/cjk_aux.h):
    cjk_match(tbl, labels [, max_chars [, open [, close [, ellipsis [, max_matches]]]]]) ->
    {"matched_in": [...], "column": ..., "snippet": ..., "start": s, "end": e,
     "window": [ws, we], "matches": [[s, e], ...], "match_count": n}
Offsets are characters of the column text as bytes.decode("utf-8", "replace")
sees it.
"""
from __future__ import annotations

import json
import os
import re
import sys

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cjk_tokenizer

sys.path.insert(0, os.path.dirname(__file__))
from _plugin_hosts import require_loading  # noqa: E402

LABELS = "content,reasoning,tool_name,tool_calls"
OPEN, CLOSE, ELL = "\u27e6", "\u27e7", "\u2026"  # ⟦ ⟧ …


def _connect():
    conn = apsw.Connection(":memory:")
    cjk_tokenizer.load(conn)
    return conn


@pytest.fixture
def db():
    conn = _connect()
    conn.execute(
        "create virtual table m using fts5(content, reasoning, tool_name, tool_calls, "
        "tokenize='cjk_unicode61')"
    )
    yield conn
    conn.close()


def add(conn, content, reasoning=None, tool_name=None, tool_calls=None, table="m"):
    conn.execute(f"insert into {table} values(?,?,?,?)", (content, reasoning, tool_name, tool_calls))
    return conn.last_insert_rowid()


def from_fields(text):
    """The layout 'fields' read back into the object layout's keys (no "matches")."""
    fields = text.split("\x1f", 9)
    assert len(fields) == 10, text
    matched_in, column, start, end, w0, w1, before, after, count, snippet = fields
    assert before in ("0", "1") and after in ("0", "1"), text
    return {"matched_in": matched_in.split(",") if matched_in else [], "column": column, "snippet": snippet,
            "start": int(start) if start else None, "end": int(end) if end else None,
            "window": [int(w0), int(w1)], "cut": [before == "1", after == "1"], "match_count": int(count)}


def cm(conn, query, max_chars=200, table="m", labels=LABELS, markers=(OPEN, CLOSE, ELL)):
    """cjk_match for every row matching query, as parsed dicts (rowid order).
    Each is checked against the layouts 'array' (its values, in order) and 'fields'
    (its values but "matches") of the same call."""
    sql = (
        f"select rowid, cast(cjk_match({table}, ?, ?, ?, ?, ?) as blob), "
        f"cast(cjk_match({table}, ?, ?, ?, ?, ?, 100, 'array') as blob), "
        f"cast(cjk_match({table}, ?, ?, ?, ?, ?, 100, 'fields') as blob) from {table} "
        f"where {table} match ? order by rowid"
    )
    out = []
    for rowid, raw, raw_array, raw_fields in conn.execute(sql, (labels, max_chars, *markers) * 3 + (query,)):
        text = bytes(raw).decode("utf-8")  # strict: the result must be valid UTF-8
        res = json.loads(text)
        assert json.loads(bytes(raw_array).decode("utf-8")) == list(res.values()), text
        assert from_fields(bytes(raw_fields).decode("utf-8")) == {k: v for k, v in res.items() if k != "matches"}
        res["rowid"] = rowid
        out.append(res)
    return out


def one(conn, query, **kw):
    res = cm(conn, query, **kw)
    assert len(res) == 1, res
    return res[0]


def column_text(conn, rowid, column, table="m"):
    raw = conn.execute(f"select cast({column} as blob) from {table} where rowid=?", (rowid,)).fetchone()[0]
    return b"" if raw is None else bytes(raw)


def plain(snippet):
    return snippet.replace(OPEN, "").replace(CLOSE, "")


def highlights(snippet):
    return re.findall(re.escape(OPEN) + "(.*?)" + re.escape(CLOSE), snippet, flags=re.S)


def check_consistent(res, text, max_chars, markers=(OPEN, CLOSE, ELL)):
    """The snippet is exactly the window of the column text, with the listed
    highlights marked and an ellipsis on each side where non-space text was cut."""
    op, cl, el = markers
    ws, we = res["window"]
    n = len(text)
    assert 0 <= ws <= we <= n
    assert we - ws <= max_chars
    expected = []
    if text[:ws].strip():
        expected.append(el)
    if res["match_count"] <= len(res["matches"]):
        ranges = [tuple(r) for r in res["matches"]]
        pos = ws
        for s, e in ranges:
            assert 0 <= s < e <= n
            s2, e2 = max(s, ws), min(e, we)
            if s2 >= e2:
                continue
            expected.append(text[pos:s2])
            expected.append(op + text[s2:e2] + cl)
            pos = e2
        expected.append(text[pos:we])
    else:
        expected.append(None)  # too many to rebuild; check the plain text only
    if text[we:].strip():
        expected.append(el)
    if None in expected:
        assert plain(res["snippet"]).replace(el, "") == text[ws:we].replace(el, "")
    else:
        assert res["snippet"] == "".join(expected)
    shown = [tuple(r) for r in res["matches"] if r[0] < we and r[1] > ws]
    if shown:
        assert (res["start"], res["end"]) == shown[0]
    if res["start"] is None:
        assert res["end"] is None
    # merged: sorted, disjoint and not touching
    ranges = res["matches"]
    for (s1, e1), (s2, e2) in zip(ranges, ranges[1:]):
        assert e1 < s2


# ---- matched_in and the snippet column --------------------------------------


def test_cjk_row_highlights_the_phrase_once(db):
    rid = add(db, "大别山项目的部署")
    res = one(db, "大别山")
    assert res["matched_in"] == ["content"]
    assert res["column"] == "content"
    assert res["snippet"] == f"{OPEN}大别山{CLOSE}项目的部署"
    assert highlights(res["snippet"]) == ["大别山"]
    assert (res["start"], res["end"]) == (0, 3)
    assert res["matches"] == [[0, 3]] and res["match_count"] == 1
    check_consistent(res, column_text(db, rid, "content").decode(), 200)


def test_a_highlight_longer_than_the_window_keeps_its_whole_span(db):
    # start/end name the whole first highlight (search's Hit.span); the snippet shows the part that fits
    add(db, "大别山项目管理系统")
    res = one(db, '"项目管理"', max_chars=1)
    assert (res["start"], res["end"]) == (3, 7) and res["window"] == [3, 4]
    assert res["snippet"] == f"{ELL}{OPEN}项{CLOSE}{ELL}"


def test_overlapping_phrases_merge_into_one_highlight(db):
    add(db, "我们在大别山项目上")
    res = one(db, "大别 别山")  # two phrases whose bigrams overlap
    assert highlights(res["snippet"]) == ["大别山"]
    res = one(db, '"大别山" 山项')
    assert highlights(res["snippet"]) == ["大别山项"]  # touching highlights merge too


def test_one_character_prefix_highlights_just_that_character(db):
    rid = add(db, "大别山项目。山水之间，看山。")
    res = one(db, '"山"*')
    text = column_text(db, rid, "content").decode()
    assert highlights(res["snippet"]) == ["山", "山", "山"]
    assert res["matches"] == [[i, i + 1] for i, ch in enumerate(text) if ch == "山"]
    check_consistent(res, text, 200)


def test_bigram_prefix_and_unigram_exact(db):
    add(db, "大山和小山")
    assert highlights(one(db, '"山"*')["snippet"]) == ["山", "山"]
    assert highlights(one(db, "小山")["snippet"]) == ["小山"]
    assert highlights(one(db, '"山和"*')["snippet"]) == ["山和"]


def test_token_only_in_reasoning(db):
    add(db, "普通的回答内容", "秘密推理在这里")
    res = one(db, "推理")
    assert res["matched_in"] == ["reasoning"]
    assert res["column"] == "reasoning"
    assert highlights(res["snippet"]) == ["推理"]


def test_token_in_both_prefers_content(db):
    add(db, "部署服务器", "想想部署的问题")
    res = one(db, "部署")
    assert res["matched_in"] == ["content", "reasoning"]
    assert res["column"] == "content"
    assert plain(res["snippet"]) == "部署服务器"


def test_column_with_more_distinct_phrases_wins(db):
    add(db, "部署服务器", "部署之前先备份数据库", "shell", '{"cmd": "pg_dump"}')
    res = one(db, "部署 OR 备份")
    assert res["matched_in"] == ["content", "reasoning"]
    assert res["column"] == "reasoning"
    assert highlights(res["snippet"]) == ["部署", "备份"]


def test_tool_columns(db):
    add(db, "", None, "run_shell", '{"cmd": "kubectl rollout restart deploy/api"}')
    res = one(db, "kubectl")
    assert res["matched_in"] == ["tool_calls"]
    assert res["column"] == "tool_calls"
    assert highlights(res["snippet"]) == ["kubectl"]
    res = one(db, "run_shell OR kubectl")
    assert res["matched_in"] == ["tool_name", "tool_calls"]
    assert res["column"] == "tool_name"  # one phrase each: the lower column index


def test_column_filter_query(db):
    add(db, "部署服务器", "部署")
    res = one(db, "{reasoning}: 部署")
    assert res["matched_in"] == ["reasoning"] and res["column"] == "reasoning"


def test_latin_rows(db):
    rid = add(db, "The deployment failed. We rolled back the engine and restarted.")
    res = one(db, "engine")
    assert highlights(res["snippet"]) == ["engine"]
    res = one(db, "eng*")  # a Latin prefix highlights the whole word
    assert highlights(res["snippet"]) == ["engine"]
    res = one(db, '"rolled back"')
    assert highlights(res["snippet"]) == ["rolled back"]
    check_consistent(res, column_text(db, rid, "content").decode(), 200)
    res = one(db, "DEPLOYMENT")  # case folded by unicode61
    assert highlights(res["snippet"]) == ["deployment"]


def test_mixed_rows(db):
    add(db, "请修改youer服务的配置，然后重启nginx。")
    res = one(db, "youer")
    assert highlights(res["snippet"]) == ["youer"]
    res = one(db, "修改youer服务")
    assert highlights(res["snippet"]) == ["修改youer服务"]
    res = one(db, "服务 nginx")
    assert highlights(res["snippet"]) == ["服务", "nginx"]


def test_width_folded_text_highlights_original_characters(db):
    add(db, "ログをＨｅｌｌｏ１２３で検索、ｶﾀｶﾅも")
    assert highlights(one(db, "hello123")["snippet"]) == ["Ｈｅｌｌｏ１２３"]
    assert highlights(one(db, "カタカナ")["snippet"]) == ["ｶﾀｶﾅ"]


def test_multi_phrase_queries(db):
    add(db, "大别山项目的部署文档。部署前先检查大别山的配置。")
    res = one(db, "大别山 AND 部署")
    assert sorted(set(highlights(res["snippet"]))) == ["大别山", "部署"]
    res = one(db, "NEAR(大别山 部署, 6)")
    assert "部署" in highlights(res["snippet"])
    res = one(db, "大别山 NOT 不存在")
    assert highlights(res["snippet"]) == ["大别山", "大别山"]
    res = one(db, "配置 OR 不存在")
    assert highlights(res["snippet"]) == ["配置"]


def test_phrase_does_not_cross_punctuation(db):
    add(db, "AB大别。别山CD 大别山")
    res = one(db, "大别山")
    assert res["matches"] == [[10, 13]]


# ---- snippet size and breaks -------------------------------------------------


def test_snippet_is_limited_in_characters(db):
    filler = "这是一段很长的填充文字没有任何标点符号" * 20
    rid = add(db, filler + "大别山" + filler)
    text = column_text(db, rid, "content").decode()
    for limit in (1, 2, 5, 10, 31, 64, 200):
        res = one(db, "大别山", max_chars=limit)
        body = plain(res["snippet"]).replace(ELL, "")
        assert len(body) <= limit
        assert res["snippet"].startswith(ELL) and res["snippet"].endswith(ELL)
        if limit >= 3:
            assert highlights(res["snippet"]) == ["大别山"]
            assert f"{OPEN}大别山{CLOSE}" in res["snippet"]
        else:
            assert highlights(res["snippet"]) == ["大别山"[:limit]]
        assert (res["start"], res["end"]) == (len(filler), len(filler) + 3)
        check_consistent(res, text, limit)


def test_snippet_breaks_at_cjk_sentence_ends(db):
    text = (
        "第一句话讲的是别的事情，而且这一句特别特别地长。第二句提到大别山项目需要部署！"
        "第三句又是另外一个很长很长的话题内容"
    )
    add(db, text)
    res = one(db, "大别山", max_chars=30)
    assert plain(res["snippet"]) == f"{ELL}第二句提到大别山项目需要部署！{ELL}"
    check_consistent(res, text, 30)
    # when the text before fits, whole sentences are kept
    res = one(db, "大别山", max_chars=45)
    assert plain(res["snippet"]) == "第一句话讲的是别的事情，而且这一句特别特别地长。第二句提到大别山项目需要部署！" + ELL
    check_consistent(res, text, 45)


def test_snippet_uses_its_budget_after_a_sentence_cut(db):
    text = (
        "我检查了服务器的日志。昨天晚上 nginx 的配置被修改过，导致大别山项目的部署失败了！\n"
        "The deploy script exited with code 137, which usually means the container was "
        "OOM-killed. I restarted the pod and the rollout completed."
    )
    add(db, text)
    res = one(db, "部署", max_chars=60)  # both sentences fit: start at the text start
    assert plain(res["snippet"]) == "我检查了服务器的日志。昨天晚上 nginx 的配置被修改过，导致大别山项目的部署失败了！" + ELL
    res = one(db, "OOM", max_chars=60)  # cut after "killed.", the rest goes before
    assert plain(res["snippet"]) == f"{ELL}code 137, which usually means the container was OOM-killed.{ELL}"
    check_consistent(res, text, 60)


def test_snippet_breaks_at_newlines_and_ascii_sentences(db):
    text = "line one is here\nthe engine line is second\nline three goes on and on and on"
    add(db, text)
    res = one(db, "engine", max_chars=30)
    assert plain(res["snippet"]) == f"{ELL}the engine line is second{ELL}"
    text2 = "Short intro. The engine stalled twice today. Later text follows here for a while."
    add(db, text2)
    res = one(db, "stalled", max_chars=40)
    assert plain(res["snippet"]) == f"{ELL}The engine stalled twice today.{ELL}"


def test_snippet_does_not_cut_latin_words(db):
    words = " ".join(f"word{i}" for i in range(200))
    text = words + " target " + words
    rid = add(db, text)
    res = one(db, "target", max_chars=50)
    body = plain(res["snippet"]).strip(ELL)
    assert body.startswith("word") and body.endswith(tuple("0123456789"))
    for w in body.split():
        assert w == "target" or re.fullmatch(r"word\d+", w), w
    check_consistent(res, column_text(db, rid, "content").decode(), 50)


def test_long_match_is_cut_at_the_window(db):
    run = "大别山" * 40
    rid = add(db, run)
    res = one(db, run[:60], max_chars=10)  # a 60-character phrase in a 10-character window
    assert len(plain(res["snippet"]).replace(ELL, "")) == 10
    assert res["snippet"].startswith(OPEN)
    check_consistent(res, column_text(db, rid, "content").decode(), 10)


def test_best_window_covers_most_distinct_phrases(db):
    filler = "无关的内容" * 30
    text = "部署" + filler + "大别山" + filler + "部署和大别山在一起" + filler
    add(db, text)
    res = one(db, "部署 大别山", max_chars=40)
    assert "部署和大别山在一起" in plain(res["snippet"])
    assert highlights(res["snippet"]) == ["部署", "大别山"]


def test_default_markers_and_arguments(db):
    add(db, "大别山项目")
    raw = db.execute("select cjk_match(m, 'content') from m where m match '大别山'").fetchone()[0]
    res = json.loads(raw)
    assert res["snippet"] == "**大别山**项目"
    raw = db.execute(
        "select cjk_match(m, 'content', null, null, null, null) from m where m match '大别山'"
    ).fetchone()[0]
    assert json.loads(raw)["snippet"] == "**大别山**项目"
    raw = db.execute(
        "select cjk_match(m, 'content', 3, '<b>', '</b>') from m where m match '项目'"
    ).fetchone()[0]
    assert json.loads(raw)["snippet"] == "山<b>项目</b>" or json.loads(raw)["snippet"].count("<b>") == 1
    # the layout: 'object' is the default, as is NULL
    whole = "select cjk_match(m, 'content', 10, '[', ']', '~', 5{}) from m where m match '大别山'"
    default = db.execute(whole.format("")).fetchone()[0]
    assert [db.execute(whole.format(f", {v}")).fetchone()[0] for v in ("'object'", "null")] == [default] * 2
    assert json.loads(db.execute(whole.format(", 'array'")).fetchone()[0]) == list(json.loads(default).values())
    fields = db.execute(whole.format(", 'fields'")).fetchone()[0]
    assert fields == "\x1f".join(["content", "content", "0", "3", "0", "5", "0", "0", "1", "[大别山]项目"])


def test_the_fields_layout_keeps_every_character_of_the_snippet(db):
    # the separator itself, quotes, backslashes, control characters and a malformed byte
    text = '大别山\x1f"\\\n\x00'
    db.execute("insert into m(content) values(cast(? as text) || cast(x'ff' as text))", (text,))
    (raw,) = db.execute("select cjk_match(m, 'content', 50, '<', '>', '~', 0, 'fields') from m "
                        "where m match '大别山'").fetchone()
    assert raw.split("\x1f", 9)[9] == '<大别山>\x1f"\\\n\x00\ufffd'
    assert from_fields(raw)["window"] == [0, 9] and from_fields(raw)["match_count"] == 1


def test_labels(db):
    add(db, "x", "大别山")
    res = one(db, "大别山", labels=" content , reasoning ")
    assert res["matched_in"] == ["reasoning"]
    res = one(db, "大别山", labels="content")  # missing labels are column numbers
    assert res["matched_in"] == ["1"] and res["column"] == "1"
    res = one(db, "大别山", labels='a,"b\\')
    assert res["column"] == '"b\\'
    raw = db.execute("select cjk_match(m, null, 10) from m where m match '大别山'").fetchone()[0]
    assert json.loads(raw)["column"] == "1"
    # in the layout 'fields' a label that could hold the separator is the column's number
    raw = db.execute("select cjk_match(m, 'content,reason' || char(31) || 'ing', 10, '', '', '', 0, 'fields') "
                     "from m where m match '大别山'").fetchone()[0]
    assert from_fields(raw)["matched_in"] == ["1"] and from_fields(raw)["column"] == "1"
    raw = db.execute("select cjk_match(m, 'content,reasoning', 10, '', '', '', 0, 'fields') "
                     "from m where m match '大别山'").fetchone()[0]
    assert from_fields(raw)["matched_in"] == ["reasoning"] and from_fields(raw)["column"] == "reasoning"


@pytest.mark.parametrize(
    "args",
    ["", ", 'a', 0", ", 'a', -5", ", 'a', 'ten'", ", 'a', x'00'", ", 'a', 10, 'o', 'c', 'e', 'x'",
     ", 'a', 10, 'o', 'c', 'e', -1", ", 'a', 10, 'o', 'c', 'e', 5, 'arr'", ", 'a', 10, 'o', 'c', 'e', 5, 1",
     ", 'a', 10, 'o', 'c', 'e', 5, 'Array'", ", 'a', 10, 'o', 'c', 'e', 5, x'6172726179'",
     ", 'a', 10, 'o', 'c', 'e', 5, 'array', 6", ", 'a', 10, 'o', 'c', 'e', 5, 'Fields'",
     ", 'a', 10, 'o', 'c', 'e', 5, 'field'"],
)
def test_bad_arguments_raise(db, args):
    add(db, "大别山")
    with pytest.raises(apsw.SQLError, match="cjk_match"):
        db.execute(f"select cjk_match(m{args}) from m where m match '大别山'").fetchall()


def test_huge_max_chars(db):
    add(db, "大别山项目")
    res = one(db, "大别山", max_chars=2**62)
    assert plain(res["snippet"]) == "大别山项目"
    res = one(db, "大别山", max_chars=1e12)
    assert plain(res["snippet"]) == "大别山项目"


# ---- NULL, empty, invalid UTF-8, escaping ------------------------------------


def test_null_and_empty_columns(db):
    add(db, None, "只有推理有大别山")
    add(db, "", "大别山在推理里", "", None)
    res = cm(db, "大别山")
    assert [r["matched_in"] for r in res] == [["reasoning"], ["reasoning"]]
    assert all(highlights(r["snippet"]) == ["大别山"] for r in res)


def test_no_match_scan_shows_first_nonempty_column(db):
    add(db, None, "   \n 推理开头的文字。后面还有很多很多的内容")
    add(db, None, None, None, None)
    rows = db.execute(f"select cjk_match(m, '{LABELS}', 10, '[', ']', '~') from m order by rowid").fetchall()
    first, second = (json.loads(r[0]) for r in rows)
    assert first["matched_in"] == [] and first["column"] == "reasoning"
    assert first["snippet"] == "推理开头的文字。~"
    assert first["start"] is None and first["matches"] == [] and first["match_count"] == 0
    assert second["snippet"] == "" and second["column"] == "content"


def test_invalid_utf8_column(db):
    raw = b"\xff\xfe\xe5\xa4\xa7\xe5\x88\xab\xe5\xb1\xb1\xe4\xb8\x80\xc3\x28 ok \xed\xa0\x80 end \xe4\xb8"
    db.execute("insert into m(content) values(cast(? as text))", (raw,))
    res = one(db, "大别山")
    text = raw.decode("utf-8", "replace")
    assert highlights(res["snippet"]) == ["大别山"]
    assert (res["start"], res["end"]) == (text.index("大别山"), text.index("大别山") + 3)
    assert "\ufffd" in res["snippet"]
    check_consistent(res, text, 200)
    res = one(db, "end")
    assert res["matches"] == [[text.index("end"), text.index("end") + 3]]
    check_consistent(res, text, 200)


def test_json_escaping(db):
    text = 'say "大别山" \\ back\tslash\x01\x1f\x7f \u2028 next\r\nline'
    rid = add(db, text)
    res = one(db, "大别山")
    assert plain(res["snippet"]) == text
    check_consistent(res, column_text(db, rid, "content").decode(), 200)
    raw = db.execute(f"select cjk_match(m, '{LABELS}') from m where m match '大别山'").fetchone()[0]
    assert "\u2028" not in raw and "\\u2028" in raw and "\\u0001" in raw


@pytest.mark.parametrize("place", range(1, 10))
@pytest.mark.parametrize("sep", ["\u2028", "\u2029"])
def test_line_separators_inside_cjk_text_are_escaped(db, place, sep):
    # inside runs of three-byte characters, which the JSON writer copies whole,
    # at every place of its 24-byte steps
    text = "甲乙丙丁戊己庚辛" * 2 + "大别山" + "子丑寅卯辰巳午未" * 2
    text = text[:place] + sep + text[place:len(text) - place] + sep + text[len(text) - place:]
    add(db, text)
    raw = db.execute(f"select cjk_match(m, '{LABELS}') from m where m match '大别山'").fetchone()[0]
    assert sep not in raw and raw.count(sep.encode("unicode_escape").decode()) == 2
    assert json.loads(raw)["snippet"].replace("**", "") == text  # short enough to be shown whole


def test_markers_are_escaped_and_sanitized(db):
    add(db, "大别山")
    raw = db.execute(
        "select cast(cjk_match(m, 'c', 10, '\"<', cast(x'ff3e' as text), '\\') as blob) "
        "from m where m match '大别山'"
    ).fetchone()[0]
    res = json.loads(bytes(raw).decode("utf-8"))
    assert res["snippet"] == '"<大别山\ufffd>'


# ---- other tables ------------------------------------------------------------


def test_external_content_table():
    conn = _connect()
    conn.execute(
        "create table msgs(id integer primary key, content text, reasoning text);"
        "create virtual table msgs_fts using fts5(content, reasoning, content='msgs', "
        "content_rowid='id', tokenize='cjk_unicode61');"
        "create trigger msgs_ai after insert on msgs begin "
        "insert into msgs_fts(rowid, content, reasoning) values (new.id, new.content, new.reasoning); end;"
    )
    conn.execute("insert into msgs(content, reasoning) values('部署大别山项目', '内部思考：回滚方案')")
    conn.execute("insert into msgs(content, reasoning) values('hello engine', null)")
    res = cm(conn, "回滚", table="msgs_fts", labels="content,reasoning")
    assert len(res) == 1 and res[0]["matched_in"] == ["reasoning"]
    assert highlights(res[0]["snippet"]) == ["回滚"]
    res = cm(conn, "大别山 OR engine", table="msgs_fts", labels="content,reasoning")
    assert [highlights(r["snippet"]) for r in res] == [["大别山"], ["engine"]]
    conn.close()


def test_contentless_table():
    conn = _connect()
    conn.execute("create virtual table c using fts5(content, reasoning, content='', tokenize='cjk_unicode61')")
    conn.execute("insert into c(rowid, content, reasoning) values(1, '大别山项目', '推理')")
    res = cm(conn, "大别山", table="c", labels="content,reasoning")
    assert res[0]["matched_in"] == ["content"] and res[0]["snippet"] == ""
    conn.close()


@pytest.mark.parametrize("detail", ["full", "column", "none"])
def test_detail_modes_do_not_fail(detail):
    conn = _connect()
    conn.execute(f"create virtual table d using fts5(content, reasoning, detail={detail}, tokenize='cjk_unicode61')")
    conn.execute("insert into d values('大别山项目', '想想大别山')")
    res = cm(conn, "大别 OR 项目", table="d", labels="content,reasoning")
    assert res[0]["column"] == "content"
    check_consistent(res[0], "大别山项目", 200)
    if detail != "none":
        assert res[0]["matched_in"] == ["content", "reasoning"]
    if detail == "full":
        assert highlights(res[0]["snippet"]) == ["大别", "项目"]
    conn.close()


@pytest.mark.parametrize("tokenize", ["unicode61", "trigram", "porter unicode61"])
def test_other_tokenizers(tokenize):
    conn = _connect()
    conn.execute(f"create virtual table o using fts5(content, reasoning, tokenize='{tokenize}')")
    conn.execute("insert into o values('the deploying engines work', 'nothing here')")
    res = cm(conn, "engines", table="o", labels="content,reasoning")
    assert highlights(res[0]["snippet"]) == ["engines"]
    conn.close()


def test_registrations_are_per_connection():
    a, b = _connect(), _connect()
    for c in (a, b):
        c.execute("create virtual table t using fts5(x, tokenize='cjk_unicode61')")
        c.execute("insert into t values('大别山项目')")
    a.close()  # b's registration carries its own copy of the host routines
    res = cm(b, "大别山", table="t", labels="x")
    assert highlights(res[0]["snippet"]) == ["大别山"]
    b.close()


def test_stdlib_sqlite3_host():
    """Debian's SQLite 3.40 (Fts5ExtensionApi v2: no xQueryToken) through stdlib sqlite3."""
    import sqlite3

    require_loading()  # a failure in the debian stage, where this is the point
    conn = sqlite3.connect(":memory:")
    cjk_tokenizer.load(conn)
    conn.execute("create virtual table t using fts5(content, reasoning, tokenize='cjk_unicode61')")
    conn.execute("insert into t values('大山和小山，大别山项目', '推理：部署')")
    conn.execute("insert into t values(cast(x'ff' || cast('大别山' as blob) as text), null)")

    def run(q):
        return [
            json.loads(r[0])
            for r in conn.execute(
                "select cjk_match(t, 'content,reasoning', 50, '[', ']') from t where t match ? order by rowid",
                (q,),
            )
        ]

    res = run("大别山")
    assert [r["snippet"] for r in res] == ["大山和小山，[大别山]项目", "\ufffd[大别山]"]
    assert run("部署")[0]["matched_in"] == ["reasoning"]
    # several instances of "山"* let the query token be inferred: just 山 each time
    assert run('"山"*')[0]["snippet"] == "大[山]和小[山]，大别[山]项目"
    conn.close()


def test_many_matches(db):
    text = "大别山。" * 500
    rid = add(db, text)
    res = one(db, "大别山", max_chars=50)
    assert res["match_count"] == 500 and len(res["matches"]) == 100
    assert res["matches"][0] == [0, 3]
    check_consistent(res, column_text(db, rid, "content").decode(), 50)


@pytest.mark.parametrize("max_matches, listed", [(0, 0), (2, 2), (None, 100), (2**62, 500), (7.9, 7)])
def test_max_matches_limits_the_list_only(db, max_matches, listed):
    text = "大别山。" * 250 + "abc 大别山 -12345 " * 250
    add(db, text)
    sql = "select cjk_match(m, 'content', 50, '[', ']', '…', ?) from m where m match '大别山'"
    res = json.loads(db.execute(sql, (max_matches,)).fetchone()[0])
    full = one(db, "大别山", max_chars=50, markers=("[", "]", "…"))
    assert res["match_count"] == 500 and len(res["matches"]) == listed
    spans = [[m.start(), m.end()] for m in re.finditer("大别山", text)]
    assert res["matches"] == spans[:listed]
    assert {k: v for k, v in res.items() if k != "matches"} == {k: v for k, v in full.items()
                                                                if k not in ("matches", "rowid")}


# ---- properties --------------------------------------------------------------

_CONN = None


def _prop_conn():
    global _CONN
    if _CONN is None:
        _CONN = _connect()
        _CONN.execute(
            "create virtual table p using fts5(content, reasoning, tokenize='cjk_unicode61')"
        )
    return _CONN


CJK_ALPHABET = "大别山项目部署的"
_chunks = st.one_of(
    st.text(alphabet=CJK_ALPHABET, min_size=1, max_size=8),
    st.sampled_from(["engine", "Deploy", "abc", "x1", "山", "ｶﾀ", "Ｈｉ"]),
    st.sampled_from([" ", "\n", "。", "，", ". ", "!", "\t", '"', "\\", "\x01"]),
)
_bad_bytes = st.sampled_from([b"\xff", b"\xe4\xb8", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xf4\x90\x80\x80"])
_doc = st.lists(st.one_of(_chunks.map(lambda s: s.encode()), _bad_bytes), max_size=40).map(b"".join)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    content=_doc,
    reasoning=st.one_of(st.none(), _doc),
    query=st.one_of(
        st.text(alphabet=CJK_ALPHABET, min_size=1, max_size=4),
        st.sampled_from(["engine", "deploy*", "山*", '"大"*', "大别 OR engine", "x1 OR 部署"]),
    ),
    max_chars=st.integers(min_value=1, max_value=60),
)
def test_property_random_text_never_errors(content, reasoning, query, max_chars):
    conn = _prop_conn()
    conn.execute("delete from p")
    conn.execute(
        "insert into p(rowid, content, reasoning) values(1, cast(? as text), cast(? as text))",
        (content, reasoning),
    )
    if len(query) == 1 and query in CJK_ALPHABET:
        query = f'"{query}"*'
    try:
        res = cm(conn, query, max_chars=max_chars, table="p", labels="content,reasoning")
    except apsw.SQLError as exc:  # only a malformed query may fail, never cjk_match
        assert "cjk_match" not in str(exc)
        return
    for r in res:
        assert set(r["matched_in"]) <= {"content", "reasoning"}
        if r["matched_in"]:
            assert r["column"] in r["matched_in"]
        raw = content if r["column"] == "content" else (reasoning or b"")
        check_consistent(r, raw.decode("utf-8", "replace"), max_chars)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    runs=st.lists(st.text(alphabet="大别山项目", min_size=1, max_size=12), min_size=1, max_size=5),
    seps=st.lists(st.sampled_from([" ", "。", "ab", "\n"]), min_size=5, max_size=5),
    data=st.data(),
)
def test_property_cjk_highlights_are_exact(runs, seps, data):
    """Every highlighted character is part of an occurrence of the query, and
    every occurrence is highlighted (phrase for 2+ characters, prefix for 1)."""
    text = "".join(r + s for r, s in zip(runs, seps))
    run = data.draw(st.sampled_from(runs))
    i = data.draw(st.integers(0, len(run) - 1))
    q = run[i : i + data.draw(st.integers(1, 4))]
    query = f'"{q}"*' if len(q) == 1 else f'"{q}"'
    conn = _prop_conn()
    conn.execute("delete from p")
    conn.execute("insert into p(rowid, content) values(1, ?)", (text,))
    res = cm(conn, query, max_chars=len(text) + 5, table="p", labels="content,reasoning")
    assert len(res) == 1
    expected = set()
    start = text.find(q)
    while start >= 0:
        expected.update(range(start, start + len(q)))
        start = text.find(q, start + 1)
    got = set()
    for s, e in res[0]["matches"]:
        got.update(range(s, e))
    assert res[0]["match_count"] <= 100
    assert got == expected
    check_consistent(res[0], text, len(text) + 5)


# ---- re-tokenizing spares what it does not need ---------------------------------
# cjk_match re-tokenizes a column to place its instances; cjk_unicode61 counts
# the tokens the collector does not need instead of emitting them (whole ASCII
# tokens, a CJK run's bigrams, unigrams and gaps; csrc/cjk_aux.h,
# cjk_collect_token).  The highlights must be those the full tokenization
# gives, which cjk_tokenizer.tokenize() shows (it runs the tokenizer with a
# callback of its own, so nothing is spared there).

_SPARE_ARGS = [(), ("remove_diacritics", "2", "unigrams", "1"), ("tokenchars", "-_."),
               ("separators", "xX"), ("categories", "L* N* Co P*"), ("remove_diacritics", "0", "tokenchars", "é"),
               ("fold_variants", "1", "unigrams", "1"), ("separators", "目"), ("tokenchars", "、_")]
_SPARE_CONNS: dict = {}


def _spare_conn(args):
    """A table s with cjk_unicode61 and these options, and p wrapping it in porter
    (porter hands cjk_unicode61 a callback of its own: nothing is spared there)."""
    if args not in _SPARE_CONNS:
        conn = _connect()
        tokenize = " ".join(["cjk_unicode61", *(f"'{a}'" for a in args)]).replace('"', '""')
        conn.execute(f"create virtual table s using fts5(content, tokenize=\"{tokenize}\")")
        conn.execute(f"create virtual table p using fts5(content, tokenize=\"porter {tokenize}\")")
        _SPARE_CONNS[args] = conn
    return _SPARE_CONNS[args]


_spare_piece = st.one_of(
    st.text(alphabet="abcXYZ019_-.é", min_size=1, max_size=6),
    st.sampled_from([" ", "  ", "\n", "\t", ", ", "::", "/", "[ 79%]", "é", "café", "Straße", "Жук", "x-y",
                     "ｈｉ", "ＡＢ1", "项目", "目标", "部署失败", "。", "e\u0301", "🎉", '"q"', "a.b", "=>"]),
    st.sampled_from(["PASSED tests/test_core.py::test_x ", "def f(a, b):\n    return a\n", "项目管理系统。",
                     "目标是部署", "파일을 저장했습니다 "]).map(lambda s: s * 6),
    st.text(alphabet="项目标部署", min_size=1, max_size=8),
    # plain CJK letters next to those that are not: voiced marks (combining and
    # half-width), a variation selector, traditional forms, a non-Han block
    st.lists(st.sampled_from(["が", "か\u3099", "ｶﾞ", "ゔ", "カ", "ー", "學", "习", "葛\U000E0100", "파", "일",
                              "㐀", "䷀", "一", "鿿", "가", "힣", "\ud7a4", "ぁ", "ヺ", "・", "ヽ", "目"]),
             min_size=1, max_size=10).map("".join),
    # CJK punctuation and full-width forms between runs: separators or not,
    # depending on the options (categories, tokenchars)
    st.lists(st.sampled_from(["，", "。", "、", "「", "」", "（", "）", "：", "！", "〜", "〆", "々", "〇", "\u3000",
                              "\u303f", "．", "ａ", "１", "＿", "_", " ", "项", "目"]),
             min_size=1, max_size=10).map("".join),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(_spare_piece, min_size=1, max_size=50), args=st.sampled_from(_SPARE_ARGS),
       data=st.data())
def test_highlights_are_those_of_the_full_tokenization(pieces, args, data):
    from cjk_tokenizer import tokenize

    text = "".join(pieces)
    toks = tokenize(text, mode="aux", args=args)
    choices = sorted({t for t, s, e, coloc in toks if t != "\x1e"})  # any token, colocated ones too
    if not choices:
        return
    wanted = data.draw(st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True))
    conn = _spare_conn(args)
    for table in ("s", "p"):
        conn.execute(f"delete from {table}")
        conn.execute(f"insert into {table}(rowid, content) values(1, ?)", (text,))
    query = " OR ".join('"' + t.replace('"', '""') + '"' for t in wanted)
    res = cm(conn, query, max_chars=30, table="s", labels="content")
    assert len(res) == 1, (query, text)
    if any(len(t) == 1 and not t.isascii() for t in wanted):
        # A lone CJK character matches unigrams colocated with bigrams, and the
        # highlight rule for those (csrc/cjk_aux.h) is not the token list's: compare
        # with the same table behind porter, which leaves CJK tokens as they are.
        if all(not t.isascii() for t in wanted):
            assert res == cm(conn, query, max_chars=30, table="p", labels="content"), (query, text)
        return
    merged = _full_highlights(text, toks, wanted)
    assert res[0]["match_count"] == len(merged), (query, text)
    assert res[0]["matches"] == merged[:100], (query, text)
    check_consistent(res[0], text, 30)


def _full_highlights(text, toks, wanted):
    """The highlights of the tokens ``wanted`` in the full tokenization ``toks`` of
    ``text``: character spans, overlapping or touching ones merged (the contract)."""
    data_b = text.encode()

    def char(b):
        return len(data_b[:b].decode())

    merged = []
    for s, e in sorted((char(s), char(e)) for t, s, e, _ in toks if t in wanted):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


@pytest.mark.parametrize("args", [(), ("tokenchars", "-_.")])
def test_every_ascii_byte_between_spared_tokens(args):
    # Under unicode61's default ASCII token characters, whole ASCII tokens are
    # counted eight bytes at a time: every ASCII byte, at every place in a word,
    # between and inside tokens that end there or run on (into non-ASCII too).
    from cjk_tokenizer import tokenize

    rows = []
    for c in map(chr, range(1, 128)):
        for k in range(1, 10):
            rows.append(f"w{c}x{c * k}y{'z' * k}9{c}")
        rows.append(f"ab{c}cdé{c}gh{c}项目")
    text = " ".join(f"{row} {'needle ' if i % 7 == 0 else ''}{'.' * (i % 8)}" for i, row in enumerate(rows))
    text += " needle"
    conn = _spare_conn(args)
    conn.execute("delete from s")
    conn.execute("insert into s(rowid, content) values(1, ?)", (text,))
    toks = tokenize(text, mode="aux", args=args)
    for wanted in (["needle"], ["x"], ["gh", "needle"]):
        query = " OR ".join(f'"{t}"' for t in wanted)
        res = cm(conn, query, max_chars=30, table="s", labels="content")
        merged = _full_highlights(text, toks, wanted)
        assert merged and res[0]["match_count"] == len(merged), query
        assert res[0]["matches"] == merged[:100], query


def test_lone_character_after_a_spared_run_under_fold_variants():
    # The bigram after a run's counted characters carries the folded form of the
    # last one counted: 學 reads as 学, so the unigram 学 alone is highlighted.
    conn = _spare_conn(("fold_variants", "1", "unigrams", "1"))
    conn.execute("delete from s")
    text = "一二三四五六學習"
    conn.execute("insert into s(rowid, content) values(1, ?)", (text,))
    res = cm(conn, '"学"', max_chars=30, table="s", labels="content")
    assert res[0]["matches"] == [[6, 7]]


def test_highlight_after_many_spared_tokens_and_a_token_running_into_accents(db):
    log = "client/bench/keyconfig.py::test_start PASSED [ 79%]\n" * 300
    text = log + "naïve abcé configé 부서 config " + log + "final config."
    add(db, text)
    res = one(db, "config")
    starts = [m.start() for m in re.finditer(r"(?<![\wé])config(?![\wé])", text)]
    assert [s for s, _ in res["matches"]] == starts and res["match_count"] == 2
    assert res["matches"][-1] == [len(text) - 7, len(text) - 1]
    res = one(db, '"configé"')
    assert res["matches"] == [[text.index("configé"), text.index("configé") + 7]]
    # A CJK run, spared ASCII tokens, then a run starting with the character the
    # first one ended with: no gap token between them, as in the full tokenization.
    text = "项目 abc def 目标 config"
    db.execute("delete from m")
    add(db, text)
    assert one(db, "config")["matches"] == [[len(text) - 6, len(text)]]


# ---- placing a CJK phrase where its text stands -----------------------------------
# When every phrase with an instance in the snippet column is a run of plain CJK
# letters, cjk_unicode61 lets the collector place the instances at the runs'
# occurrences in the text instead of re-tokenizing it (cjk_collect_literal), if
# its options and the text allow (no separators=, fold_variants 0, nothing read
# as another letter).  The result must be the one re-tokenizing gives: the same
# table behind porter, which hands cjk_unicode61 a callback of its own.

_PHRASE_LETTERS = "代表大会项目파일パイプ"
_phrase_piece = st.one_of(
    st.text(alphabet=_PHRASE_LETTERS, min_size=1, max_size=10),
    st.sampled_from([" ", "，", "。", "abc ", "\n", "代表大会", "파일을 ", "パイプ", "代表代表代表", "目项目项"]),
    # letters read as others, or joined to the one before: the text must then be tokenized
    st.sampled_from(["代\ufe00表", "会\U000E0100", "ハ\u309aイプ", "ﾊﾟｲﾌﾟ", "パ\u3099", "ｈｉ", "（ａ）"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(_phrase_piece, min_size=1, max_size=30),
       args=st.sampled_from([(), ("remove_diacritics", "2", "unigrams", "1"), ("fold_variants", "1"),
                             ("separators", "表"), ("tokenchars", "、_")]),
       data=st.data())
def test_cjk_phrases_are_placed_as_tokenizing_places_them(pieces, args, data):
    text = "".join(pieces)
    runs = re.findall(f"[{_PHRASE_LETTERS}]{{2,}}", text)
    if not runs:
        return
    run = data.draw(st.sampled_from(runs))
    i = data.draw(st.integers(0, len(run) - 2))
    q = run[i:i + data.draw(st.integers(2, 5))]
    q2 = data.draw(st.sampled_from(runs))[:2]
    query = data.draw(st.sampled_from([f'"{q}"', f'"{q}" OR "{q2}"', f'"{q}" "{q2}"', f'NEAR("{q}" abc, 2)',
                                       f'NEAR("{q}" "{q2}", 1)', f'^"{q}"', f'"{q}" OR abc']))
    max_chars = data.draw(st.integers(3, 40))
    conn = _spare_conn(args)
    for table in ("s", "p"):
        conn.execute(f"delete from {table}")
        conn.execute(f"insert into {table}(rowid, content) values(1, ?)", (text,))
    res = cm(conn, query, max_chars=max_chars, table="s", labels="content")
    assert res == cm(conn, query, max_chars=max_chars, table="p", labels="content"), (query, text)
    for r in res:
        check_consistent(r, text, max_chars)


def _near_case(db, phrase, other):
    # NEAR keeps one instance of the phrase, of two matches: the one beside 丙丁,
    # written so that it is not an occurrence of the phrase's text as such; one
    # occurrence is.  Counting occurrences alone would pair the wrong one.
    text = phrase + "，甲乙" * 20 + "，丙丁 " + other + "。"
    add(db, text)
    res = one(db, f'NEAR("{phrase}" "丙丁", 2)')
    near, start = text.index("丙丁"), text.index(other)
    assert res["matches"] == [[near, near + 2], [start, start + len(other)]], res
    assert res["match_count"] == 2


@pytest.mark.parametrize("other", ["代\ufe00表大会", "代表大会\ufe0f", "代表\U000E0101大会"])
def test_near_keeps_the_instance_written_with_a_variation_selector(db, other):
    _near_case(db, "代表大会", other)


@pytest.mark.parametrize("other", ["ハ\u309aイプ", "ﾊﾟｲﾌﾟ", "ﾊﾟイプ", "パｲプ", "ﾊ\u309aイプ", "パイフ\u309a"])
def test_near_keeps_the_kana_instance_written_otherwise(db, other):
    # ハ + a combining mark, and the half-width forms, read as パイプ
    _near_case(db, "パイプ", other)


def test_near_keeps_the_variant_instance_under_fold_variants():
    # under fold_variants 1, 會 reads as 会: 代表大會 is an instance of "代表大会"
    conn = _spare_conn(("fold_variants", "1"))
    conn.execute("delete from s")
    text = "代表大会" + "，甲乙" * 20 + "，丙丁 代表大會。"
    conn.execute("insert into s(rowid, content) values(1, ?)", (text,))
    res = cm(conn, 'NEAR("代表大会" "丙丁", 2)', table="s", labels="content")
    assert res[0]["matches"] == [[len(text) - 8, len(text) - 6], [len(text) - 5, len(text) - 1]]


def test_instances_a_query_leaves_out_are_not_counted(db):
    # Two occurrences, one instance (NEAR, then ^): the one FTS5 reports is highlighted.
    text = "代表大会" + "，甲乙" * 20 + "，丙丁 代表大会。"
    add(db, text)
    res = one(db, 'NEAR("代表大会" "丙丁", 2)')
    assert res["matches"] == [[len(text) - 8, len(text) - 6], [len(text) - 5, len(text) - 1]]
    res = one(db, '^"代表大会"')
    assert res["matches"] == [[0, 4]] and res["match_count"] == 1


def test_overlapping_and_repeated_phrases(db):
    text = "甲代表代表代表乙，代表大会代表大会"
    add(db, text)
    assert one(db, '"代表代表"')["matches"] == [[1, 7]]
    res = one(db, '"代表大会" OR "大会代表" OR "代表"')
    assert res["matches"] == [[1, 7], [9, 17]]


@pytest.mark.parametrize("phrase, filler", [("代表大会", "a"), ("代表代表", "代表"), ("파일", "é"), ("项目", "项")])
def test_a_phrase_is_placed_at_every_offset_up_to_the_text_end(phrase, filler):
    # The search for a phrase's text tests sixteen starts at a time (eight where
    # the compiler has no byte vectors), then eight, then the last few one by
    # one: occurrences at each byte offset from a step's start, overlapping
    # ones, and one that ends the text are placed as tokenizing places them.
    conn = _spare_conn(())
    for lead in range(40):
        for tail in ("", "x", "。"):
            text = filler * lead + phrase + filler * (lead % 5) + phrase + phrase[:1] + phrase + tail
            for table in ("s", "p"):
                conn.execute(f"delete from {table}")
                conn.execute(f"insert into {table}(rowid, content) values(1, ?)", (text,))
            res = cm(conn, f'"{phrase}"', max_chars=20, table="s", labels="content")
            assert res == cm(conn, f'"{phrase}"', max_chars=20, table="p", labels="content"), text
            assert res[0]["match_count"] >= 2, text


@pytest.mark.parametrize("phrase, filler", [("代表大会", "a"), ("파일", "é"), ("项目", "x项")])
def test_an_occurrence_a_query_leaves_out_is_seen_at_every_offset(phrase, filler):
    # NEAR keeps one of the phrase's two occurrences.  The search for its text
    # must see both wherever they stand: one it missed would leave a count that
    # agrees with the one instance, placed on the wrong occurrence.
    conn = _spare_conn(())
    query = f'NEAR("{phrase}" "丙丁", 1)'
    for lead in range(40):
        for gap in (0, 1, 7):
            far = "，" + "甲乙，" * 3 + filler * gap
            for text, kept in ((filler * lead + phrase + "，丙丁" + far + phrase, lead * len(filler)),
                               (filler * lead + phrase + far + "丙丁，" + phrase, None)):
                kept = len(text) - len(phrase) if kept is None else kept
                for table in ("s", "p"):
                    conn.execute(f"delete from {table}")
                    conn.execute(f"insert into {table}(rowid, content) values(1, ?)", (text,))
                res = cm(conn, query, max_chars=20, table="s", labels="content")
                assert res == cm(conn, query, max_chars=20, table="p", labels="content"), text
                assert [kept, kept + len(phrase)] in res[0]["matches"], (text, res[0]["matches"])
                assert res[0]["match_count"] == 2, text


@pytest.mark.parametrize("size, means", [(3, 3), (3.0, 3), (3.9, 3), (1.5, 1), (0.5, None), (0, None)])
def test_max_chars_drops_a_fraction_and_refuses_less_than_one(db, size, means):
    add(db, "大别山项目管理系统")
    sql = "select cjk_match(m, ?, ?, '[', ']') from m where m match '\"项目\"'"
    if means is None:
        with pytest.raises(apsw.SQLError, match="max_chars must be a positive integer"):
            db.execute(sql, (LABELS, size)).fetchone()
    else:
        assert db.execute(sql, (LABELS, size)).fetchone() == db.execute(sql, (LABELS, means)).fetchone()


def test_an_instance_fts5_reports_twice_counts_once():
    # SQLite 3.54 may list one (phrase, column, offset) instance twice: two equal rows got different snippets
    conn = _connect()
    conn.execute("CREATE VIRTUAL TABLE u USING fts5(a, tokenize='cjk_unicode61 unigrams 1')")
    conn.execute("INSERT INTO u(rowid, a) VALUES (1, '項。。本本'), (2, '項。。本本')")
    got = [json.loads(r[0]) for r in conn.execute(
        "SELECT cjk_match(u, 'a', 3, '[', ']') FROM u WHERE u MATCH '\"本\"* OR \"項\"*' ORDER BY rowid")]
    assert got[0] == got[1]


@pytest.mark.parametrize("size, means", [("3", 3), (" 3 ", 3), ("3.9", 3), ("1e9", 10**9)])
def test_numeric_text_counts_as_its_number(db, size, means):
    # Datasette binds a query parameter (:n) as text: '80' must not be "not a positive integer"
    add(db, "大别山项目管理系统")
    sql = "select cjk_match(m, ?, ?, '[', ']', '…', ?) from m where m match '\"项目\"'"
    assert db.execute(sql, (LABELS, size, size)).fetchone() == db.execute(sql, (LABELS, means, means)).fetchone()
    for bad in ("3px", "nan", "", "-3", "0"):
        with pytest.raises(apsw.SQLError, match="max_chars must be a positive integer"):
            db.execute(sql, (LABELS, bad, 1)).fetchone()


def test_a_row_missing_from_external_content_is_named():
    conn = _connect()
    conn.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO docs VALUES (1, '大别山项目'), (2, '修改项目')")
    conn.execute("CREATE VIRTUAL TABLE e USING fts5(body, content='docs', content_rowid='id', tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO e(e) VALUES('rebuild')")
    conn.execute("DELETE FROM docs WHERE id = 2")
    with pytest.raises(apsw.Error, match="missing from the external content table"):
        conn.execute("select cjk_match(e, 'body', 10) from e where e match '\"项目\"'").fetchall()
