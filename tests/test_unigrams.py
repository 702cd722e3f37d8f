"""The tokenizer option ``unigrams 1``: one CJK character as a plain FTS5
string finds every occurrence, in raw FTS5 too; queries of 2+ characters and
``"X"*`` mean what they meant; a table created without the option (as every
earlier version did) stays consistent with its index under this code."""
from __future__ import annotations

import random

import apsw
import pytest

import cjk_tokenizer
from cjk_tokenizer import Archive, tokenize

CHARS = "大别山项目中国人一的是了天堂寨東京の天気서버배포カタカナ"
OLD_DDL = ("CREATE VIRTUAL TABLE messages_fts_cjk USING fts5(content, reasoning, tool_name, tool_calls, "
           "content='messages', content_rowid='id', tokenize='cjk_unicode61 remove_diacritics 2')")


def _docs(n=300, seed=7):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = ["".join(rng.choice(CHARS) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 4))]
        out.append(rng.choice([" ", "。", "x", "、"]).join(parts))
    return out


@pytest.fixture(scope="module")
def raw():
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    conn.execute("CREATE VIRTUAL TABLE u USING fts5(body, tokenize='cjk_unicode61 remove_diacritics 2 unigrams 1')")
    conn.execute("CREATE VIRTUAL TABLE o USING fts5(body, tokenize='cjk_unicode61 remove_diacritics 2')")
    for d in _docs():
        conn.execute("INSERT INTO u(body) VALUES (?)", (d,))
        conn.execute("INSERT INTO o(body) VALUES (?)", (d,))
    yield conn
    conn.close()


def _rows(conn, sql, *args):
    return {r[0] for r in conn.execute(sql, args)}


@pytest.mark.parametrize("ch", sorted(set(CHARS)))
def test_one_character_as_a_plain_string_equals_a_like_scan(raw, ch):
    like = _rows(raw, "SELECT rowid FROM u WHERE body LIKE ?", f"%{ch}%")
    assert like
    for match in (f'"{ch}"', ch, f'"{ch}"*'):
        assert _rows(raw, "SELECT rowid FROM u WHERE u MATCH ?", match) == like, match
    # without the option only run-final occurrences are unigrams: the plain string misses rows
    assert _rows(raw, "SELECT rowid FROM o WHERE o MATCH ?", f'"{ch}"*') == like


def test_without_the_option_the_plain_string_is_partial(raw):
    missed = [ch for ch in set(CHARS) if _rows(raw, "SELECT rowid FROM o WHERE o MATCH ?", f'"{ch}"')
              < _rows(raw, "SELECT rowid FROM o WHERE body LIKE ?", f"%{ch}%")]
    assert missed  # why the option exists


def test_runs_of_two_or_more_mean_the_same_with_and_without(raw):
    rng = random.Random(3)
    docs = _docs()
    for _ in range(150):
        d = rng.choice(docs)
        k = rng.randint(0, max(0, len(d) - 2))
        needle = d[k:k + rng.randint(2, 4)]
        if len(needle) < 2 or any(c not in CHARS for c in needle):
            continue  # a run of 2+ CJK characters (one character is the case above)
        q = '"' + needle.replace('"', '""') + '"'
        assert _rows(raw, "SELECT rowid FROM u WHERE u MATCH ?", q) == \
            _rows(raw, "SELECT rowid FROM o WHERE o MATCH ?", q), needle


def test_query_tokens_do_not_change():
    for text in ("大", "大别山", "東京の天気 hello", "ｶﾞｲﾄﾞ"):
        for mode in ("query", "prefix"):
            assert tokenize(text, mode=mode, args=["unigrams", "1"]) == tokenize(text, mode=mode)


def test_document_tokens_and_offsets():
    toks = tokenize("大别山", args=["unigrams", "1"])
    assert toks == [("大别", 0, 6, False), ("大", 0, 3, True), ("别山", 3, 9, False), ("别", 3, 6, True),
                    ("山", 6, 9, True)]
    assert [t for t in toks if not t[3]] == [t for t in tokenize("大别山") if not t[3]]  # same positions


@pytest.mark.parametrize("args, message", [
    (["unigrams", "2"], "unigrams must be 0 or 1"), (["unigrams", "yes"], "unigrams must be 0 or 1"),
    (["unigrams"], "needs a value"), (["remove_diacritics", "2"] * 33, "too many options"),
])
def test_bad_option_values_are_named(args, message):
    with pytest.raises(ValueError, match=message):
        tokenize("大", args=args)


def test_unigrams_0_is_the_old_tokenization():
    assert tokenize("大别山项目", args=["unigrams", "0"]) == tokenize("大别山项目")


def test_snippet_highlights_the_one_character(raw):
    (js,) = [r[0] for r in raw.execute("SELECT cjk_match(u, 'body', 40) FROM u WHERE u MATCH '\"寨\"' LIMIT 1")]
    import json

    data = json.loads(js)
    assert data["snippet"].count("**寨**") >= 1


# ---- archives ----------------------------------------------------------------------


def _ddl(ar):
    return ar.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_cjk'").fetchone()[0]


def test_a_new_archive_gets_unigrams_and_finds_every_occurrence(tmp_path):
    with Archive(tmp_path / "n.db") as ar:
        assert "unigrams 1" in _ddl(ar)
        ids = [ar.add_message("s", "user", d) for d in _docs(60)]
        for ch in "大山天の서":
            want = {i for i, d in zip(ids, _docs(60)) if ch in d}
            assert ar.explain(ch)["match"].endswith(f'("{ch}")')
            assert {h.message_id for h in ar.search(ch, limit=1000)} == want


def test_a_character_before_a_word_ends_its_run_on_a_new_archive(tmp_path):
    # 用API: 用 ends its run; 用户API holds the unigram 用 right before api, but its run goes on
    texts = ["用户API列表", "使用API", "目中管统，fix", "管 fix"]
    with Archive(tmp_path / "n.db") as ar:
        ids = [ar.add_message("s", "user", t) for t in texts]
        for query, want in (("用API", [ids[1]]), ('"管 fix"', [ids[3]]), ("(API) NOT 用API", [ids[0]])):
            for route in (None, "scan"):
                assert sorted(h.message_id for h in ar.search(query, route=route)) == want, (query, route)


def test_an_archive_made_without_unigrams_keeps_its_tokenization_through_writes(tmp_path):
    """Emulates an archive written by an earlier version: its cjk DDL has no
    option.  This version must keep tokenizing it the old way: FTS5 deletes
    re-tokenize the row, so any change would corrupt the index."""
    path = tmp_path / "old.db"
    with Archive(path, cjk_unigrams=False) as ar:
        assert _ddl(ar) == OLD_DDL  # byte for byte what earlier versions wrote
        ids = [ar.add_message("s", "user", d) for d in _docs(80)]
    with Archive(path) as ar:  # opened by this version with its defaults
        assert _ddl(ar) == OLD_DDL
        for i in ids[:20]:
            ar.update_message(i, content="更新后的内容 大别山")
        for i in ids[20:40]:
            ar.delete_message(i)
        ar.add_message("s", "user", "新的大消息")
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        assert ar.explain("大")["match"].endswith('("大"*)')  # the prefix form, which this index needs
        rows = ar.conn.execute("SELECT id FROM messages WHERE content LIKE '%大%'").fetchall()
        assert {h.message_id for h in ar.search("大", limit=1000)} == {r[0] for r in rows}
        assert ar.indexes.rebuild("cjk") and _ddl(ar) == OLD_DDL  # a rebuild keeps the table's options
        assert ar.indexes.integrity_check()["cjk"] == "ok"


def test_an_old_archive_gets_unigrams_by_recreating_its_cjk_index(tmp_path):
    path = tmp_path / "upgrade.db"
    with Archive(path, cjk_unigrams=False) as ar:
        ids = [ar.add_message("s", "user", d) for d in _docs(50)]
    with Archive(path) as ar:
        ar.indexes.drop("cjk")
        ar.indexes.add("cjk")
        assert ar.indexes.catch_up() is True
        assert "unigrams 1" in _ddl(ar) and ar.indexes.integrity_check()["cjk"] == "ok"
        want = {i for i, d in zip(ids, _docs(50)) if "天" in d}
        assert ar.explain("天")["match"].endswith('("天")')
        assert {h.message_id for h in ar.search("天", limit=1000)} == want


def test_new_indexes_get_the_build_settings(tmp_path):
    from cjk_tokenizer.indexing import FTS_SETTINGS

    with Archive(tmp_path / "s.db") as ar:
        for t in ("messages_fts_cjk", "messages_fts_u61"):
            config = dict(ar.conn.execute(f"SELECT k, v FROM {t}_config"))
            assert all(config[k] == v for k, v in FTS_SETTINGS.items()), (t, config)
        ar.add_message("s", "user", "大别山")
        assert ar.indexes.integrity_check()["cjk"] == "ok"


def test_what_a_search_reads_first_follows_the_catalogue(tmp_path):
    """indexes.served(), read in one statement before each search, is indexes.live() and
    the cjk table's unigram option, through every change of either."""
    from cjk_tokenizer.schema import cjk_unigrams

    def both(ar):
        return ar.indexes.live(), cjk_unigrams(ar.conn)

    path = tmp_path / "served.db"
    with Archive(path, cjk_unigrams=False, indexes=["cjk", "unicode61", "trigram"]) as ar:
        ar.add_message("s", "user", "大别山")
        assert ar.indexes.served() == both(ar) == ({"cjk", "unicode61", "trigram"}, False)
        ar.indexes.pause("cjk")
        assert ar.indexes.served() == both(ar) == ({"unicode61", "trigram"}, False)
        ar.indexes.drop("cjk")
        assert ar.indexes.served() == both(ar) == ({"unicode61", "trigram"}, False)
        ar.indexes.add("cjk")
        ar.indexes.catch_up()
        assert ar.indexes.served() == both(ar) == ({"cjk", "unicode61", "trigram"}, False)
    with Archive(path) as ar:  # this one makes a cjk table with unigrams
        ar.indexes.drop("cjk")
        ar.indexes.add("cjk")
        assert ar.indexes.served() == both(ar) == ({"unicode61", "trigram"}, True)  # not caught up yet
        ar.indexes.catch_up()
        assert ar.indexes.served() == both(ar) == ({"cjk", "unicode61", "trigram"}, True)
    with Archive(path, extension=False) as ar:  # no tokenizer here for cjk: not served
        assert ar.indexes.served() == both(ar) == ({"unicode61", "trigram"}, True)
