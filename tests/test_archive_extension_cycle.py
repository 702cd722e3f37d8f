"""The extension lost and found: the cjk index goes stale, writes go on, and it catches up.

A user's archive is written on a host with the extension, then opened on one
without it (extension=False behaves exactly like such a host), then again with
it.  Nothing written meanwhile may be lost, the stale index must never be
served or touched, and catching up must be incremental, interruptible and
leave an index FTS5's integrity-check accepts and that finds every message.
"""
from __future__ import annotations

import os
import random
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _archive_corpus as corpus  # noqa: E402

from cjk_tokenizer.archive import Archive  # noqa: E402

CJK = "messages_fts_cjk"
MARK = re.compile(r"\b(?:mk|rk|upd)\d+[zx]\b")


def unique_cjk(k: int) -> str:
    """A CJK string no generated message contains (rare Han characters)."""
    return chr(0x9F00 + k % 160) + chr(0x9E00 + k // 160)


def cjk_rowids(ar: Archive, query: str) -> set[int]:
    return {r[0] for r in ar.conn.execute(f"SELECT rowid FROM {CJK} WHERE {CJK} MATCH ?", (query,))}


def assert_cjk_index_matches_table(ar: Archive, *, deleted=(), seed=0):
    """The cjk index holds exactly the table: one document per row, every row findable."""
    rows = ar.conn.execute("SELECT id, content, reasoning FROM messages ORDER BY id").fetchall()
    assert ar.conn.execute(f"SELECT count(*) FROM {CJK}_docsize").fetchone()[0] == len(rows)
    rng = random.Random(seed)
    for mid, content, reasoning in rows:
        for token in MARK.findall((content or "") + "\n" + (reasoning or "")):
            assert cjk_rowids(ar, f'"{token}"') == {mid}, (mid, token)
        for sub in corpus.cjk_substrings(content or "", rng):
            assert mid in cjk_rowids(ar, f'content : "{sub}"'), (mid, sub)
    for old_marker in deleted:
        assert cjk_rowids(ar, f'"{old_marker}"') == set(), old_marker
    assert ar.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}


def no_trigger_touches(ar: Archive, table: str) -> bool:
    sqls = [r[0] for r in ar.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
    return not any(f"{table}(" in s or f"INTO {table} " in s for s in sqls)


def test_extension_lost_and_found(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        assert ar.extension_loaded
        ar.bulk_import(corpus.messages(300, seed=1))
        first = ar.add_message("s0", "user", "部署失败了，怎么回滚？ mk300z")
        assert ar.indexes.live() == {"cjk", "unicode61", "trigram"}
        assert cjk_rowids(ar, '"回滚"') >= {first}

    # --- a host without the extension: the archive keeps working -------------
    gone_markers = []
    with Archive(path, extension=False) as ar:
        status = ar.indexes.status()["cjk"]
        # opening to read changes nothing: hosts with the extension keep being served
        assert (status["status"], status["served"], status["exists"]) == ("live", False, True)
        assert ar.indexes.live() == {"unicode61", "trigram"}
        ar.bulk_import(corpus.messages(150, seed=2, start=301))
        assert ar.indexes.status()["cjk"]["status"] == "stale"  # the first write demoted it
        assert no_trigger_touches(ar, CJK), "a live trigger into the cjk table would fail every write here"
        late = ar.add_message("s9", "assistant", "新しいメッセージ mk451z", reasoning="想一想 mk452z")
        # updates and deletes of rows indexed before (<= watermark) and written during the outage
        for k, mid in enumerate([2, 5, 9, 40, 77, 150, 299, 305, 333, 440, late]):
            old = ar.get_message(mid)["content"]
            assert ar.update_message(mid, content=f"{unique_cjk(k)}更新 upd{k}x")
            gone_markers.append(MARK.search(old).group())
        assert ar.update_message(9, content=f"{unique_cjk(50)}再更新 upd50x")  # updated twice
        for mid in (3, 6, 9, 100, 302, 310, 446):
            gone_markers.extend(MARK.findall(ar.get_message(mid)["content"]))
            assert ar.delete_message(mid)
        ar.update_message(12, timestamp=5.0)  # a column no index covers
        assert ar.count_messages() == 301 + 151 - 7
        assert ar.indexes.status()["cjk"]["status"] == "stale"
        checks = ar.indexes.integrity_check()
        assert checks["unicode61"] == checks["trigram"] == checks["database"] == "ok"
        assert checks["cjk"].startswith("skipped")
        expected_rows = ar.count_messages()

    # --- the extension is back: incremental catch-up --------------------------
    with Archive(path, auto_catch_up=0) as ar:
        status = ar.indexes.status()["cjk"]
        assert status["status"] == "stale" and not status["served"]
        assert "cjk" not in ar.indexes.live()
        # backlog: rows changed at or below the watermark (301), plus rows appended since
        # ids changed at or below the mark: 2 5 9 40 77 150 299 (updated; 9 also deleted) + 3 6 100 (deleted)
        assert status["backlog"] == 10
        assert status["behind"] == 10 + (151 - 3)  # plus the rows appended above the mark, minus 3 deleted
        steps = []
        assert ar.indexes.catch_up(steps.append) is True
        assert steps[-1].phase == "live"
        assert steps[-1].done == status["behind"]
        assert steps[-1].done < expected_rows / 2, "catch-up redid far more than what changed"
        assert ar.indexes.live() == {"cjk", "unicode61", "trigram"}
        assert ar.count_messages() == expected_rows
        assert_cjk_index_matches_table(ar, deleted=gone_markers)
        assert cjk_rowids(ar, unique_cjk(0)) == {2}
        assert cjk_rowids(ar, unique_cjk(10)) == {late}
        assert cjk_rowids(ar, unique_cjk(2)) == cjk_rowids(ar, unique_cjk(50)) == set()  # message 9: gone


def _outage(path, n_before=400, n_during=600):
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.bulk_import(corpus.messages(n_before, seed=3))
    with Archive(path, extension=False) as ar:
        ar.bulk_import(corpus.messages(n_during, seed=4, start=n_before))
        for mid in range(1, n_before, 7):
            ar.update_message(mid, content=f"upd{mid}x 改过的内容")
        for mid in range(3, n_before + n_during, 11):
            ar.delete_message(mid)


def test_catch_up_interrupted_midway_resumes(tmp_path):
    path = tmp_path / "a.db"
    _outage(path)
    with Archive(path, auto_catch_up=0, indexes=("cjk", "unicode61", "trigram")) as ar:
        behind0 = ar.indexes.status()["cjk"]["behind"]
        calls = []

        def interrupt_third(p):
            calls.append(p)
            if len(calls) == 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            ar.indexes.catch_up(interrupt_third, chunk=50, target_seconds=None)
        st = ar.indexes.status()["cjk"]
        assert st["status"] == "stale" and "cjk" not in ar.indexes.live()
        assert st["behind"] == behind0 - calls[-1].done  # the chunks that finished stay done
        assert ar.indexes.integrity_check()["cjk"] == "ok"  # internally consistent while partial

        # An interrupt *inside* a chunk (Ctrl-C while SQLite works) rolls that chunk back.
        ticks = []

        def ctrl_c(*_):
            ticks.append(1)
            if len(ticks) > 20:
                raise KeyboardInterrupt
            return False  # keep going

        ar.conn.set_progress_handler(ctrl_c, 100)
        with pytest.raises(KeyboardInterrupt):
            ar.indexes.catch_up(chunk=200, target_seconds=None)
        ar.conn.set_progress_handler(None)
        assert ar.indexes.status()["cjk"]["behind"] == st["behind"]
        assert not ar.conn.in_transaction

        # A stop flag: the callback returns False.
        assert ar.indexes.catch_up(lambda p: False, chunk=50, target_seconds=None) is False
        st2 = ar.indexes.status()["cjk"]
        assert 0 < st2["behind"] < st["behind"]

    # Resume from another connection (e.g. after a restart).
    with Archive(path, auto_catch_up=0) as ar:
        steps = []
        assert ar.indexes.catch_up(steps.append) is True
        assert steps[-1].done == st2["behind"]
        assert_cjk_index_matches_table(ar)


def test_rebuild_interrupted_resumes_and_sees_concurrent_writes(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.bulk_import(corpus.messages(600, seed=5))
        n = ar.count_messages()
        seen = []

        def stop_after_two(p):
            seen.append(p)
            return len(seen) < 2

        assert ar.indexes.rebuild("cjk", stop_after_two, chunk=100, target_seconds=None) is False
        st = ar.indexes.status()["cjk"]
        assert st["status"] == "building" and st["indexed_upto"] == 200
        assert "cjk" not in ar.indexes.live()  # a half-built index is never served
        # Writes during the rebuild: above and below the watermark.
        new = ar.add_message("s1", "user", "建设中的新消息 upd1x")
        ar.update_message(10, content="改了 upd2x")  # already indexed: goes to the backlog
        ar.update_message(500, content="还没索引 upd3x")  # above the mark: indexed later anyway
        ar.delete_message(20)
        ar.delete_message(550)
        steps = []
        assert ar.indexes.rebuild("cjk", steps.append, chunk=100, target_seconds=None) is True  # resumes, no restart
        # one chunk replays the 2 backlog rows, then 4 chunks index the 400 rows above 200
        assert [p.phase for p in steps] == ["backlog"] + ["append"] * 4 + ["live"]
        assert steps[-1].done == 2 + 400 and ar.count_messages() == n + 1 - 2
        assert cjk_rowids(ar, "upd1x") == {new}
        assert cjk_rowids(ar, "upd2x") == {10} and cjk_rowids(ar, "upd3x") == {500}
        assert_cjk_index_matches_table(ar, deleted=["mk19z", "mk549z"])
        # restart=True really starts again from an empty index
        steps = []
        assert ar.indexes.rebuild("trigram", steps.append, restart=True) is True
        assert steps[-1].done == ar.count_messages()
        assert ar.indexes.integrity_check()["trigram"] == "ok"


def test_archive_created_without_extension_gets_its_cjk_index_later(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path, extension=False, indexes=("cjk", "unicode61", "trigram")) as ar:
        assert ar.indexes.status()["cjk"]["status"] == "absent"
        assert not ar.indexes.status()["cjk"]["exists"]
        ar.bulk_import(corpus.messages(200, seed=6))
        assert ar.indexes.integrity_check()["cjk"] == "skipped: no table"
    with Archive(path) as ar:  # a small backlog is caught up at open
        assert ar.indexes.status()["cjk"]["status"] == "live"
        assert_cjk_index_matches_table(ar)
    with Archive(path, auto_catch_up=10) as ar:
        assert ar.indexes.live() == {"cjk", "unicode61", "trigram"}


def test_large_backlog_is_left_for_an_explicit_catch_up(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path, extension=False, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.bulk_import(corpus.messages(120, seed=8))
    with Archive(path, auto_catch_up=100) as ar:  # 120 rows behind > 100: do not block the open
        st = ar.indexes.status()["cjk"]
        assert (st["status"], st["behind"], st["served"]) == ("building", 120, False)
        ar.add_message("s1", "user", "开着的时候写入 upd9x")  # writes while building still work
        assert ar.indexes.catch_up() is True
        assert cjk_rowids(ar, "upd9x") != set()
        assert_cjk_index_matches_table(ar)


def test_host_without_extension_joins_while_another_has_it_open(tmp_path):
    """The switch to stale reaches a connection that already had the extension."""
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as with_ext:
        with_ext.bulk_import(corpus.messages(50, seed=9))
        with Archive(path, extension=False) as without:
            assert with_ext.indexes.live() == {"cjk", "unicode61", "trigram"}  # opening alone demotes nothing
            a = without.add_message("s1", "user", "没有扩展 upd1x")
            assert with_ext.indexes.live() == {"unicode61", "trigram"}  # read fresh from index_state
            b = with_ext.add_message("s1", "user", "有扩展 upd2x")  # recorded, not indexed, by the new triggers
            without.update_message(5, content="改 upd3x")
        assert cjk_rowids(with_ext, "upd1x") == cjk_rowids(with_ext, "upd2x") == set()
        assert with_ext.indexes.catch_up() is True
        assert cjk_rowids(with_ext, "upd1x") == {a} and cjk_rowids(with_ext, "upd2x") == {b}
        assert cjk_rowids(with_ext, "upd3x") == {5}
        assert_cjk_index_matches_table(with_ext, deleted=["mk4z"])


def test_index_configuration(tmp_path):
    path = tmp_path / "a.db"
    with pytest.raises(ValueError, match="unicode61"):
        Archive(path, indexes=("cjk", "trigram"))
    with pytest.raises(ValueError, match="unknown index"):
        Archive(path, indexes=("cjk", "unicode61", "bigram"))
    with Archive(path, indexes=("cjk", "unicode61")) as ar:  # a user who cannot afford trigram
        assert set(ar.indexes.status()) == {"cjk", "unicode61"}
        ar.bulk_import(corpus.messages(30, seed=10))
    with Archive(path) as ar:  # None: as configured
        assert set(ar.indexes.status()) == {"cjk", "unicode61"}
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:  # added, filled at open (small)
        assert ar.indexes.status()["trigram"]["status"] == "live"
        assert ar.indexes.integrity_check()["trigram"] == "ok"
        assert {r[0] for r in ar.conn.execute(
            "SELECT rowid FROM messages_fts_tri WHERE messages_fts_tri MATCH 'mk17z'")} == {18}
    from cjk_tokenizer.archive import ArchiveError

    with pytest.raises(ArchiveError, match=r"indexes\.drop"):
        Archive(path, indexes=("cjk", "unicode61"))  # never drops an index implicitly
    with Archive(path) as ar:
        with pytest.raises(ArchiveError, match="required"):
            ar.indexes.drop("unicode61")
        ar.indexes.drop("trigram")
        assert set(ar.indexes.status()) == {"cjk", "unicode61"}
        assert ar.conn.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'messages_fts_tri%'").fetchone()[0] == 0
        assert ar.count_messages() == 30
        ar.add_message("s0", "user", "still writable")
    with Archive(path, extension=False) as ar:
        with pytest.raises(ArchiveError, match="tokenizer"):
            ar.indexes.drop("cjk")  # dropping a table whose tokenizer is missing cannot work here


def test_host_without_extension_keeps_writing_after_another_catches_up(tmp_path):
    """A catch-up elsewhere installs live cjk triggers; this host's next write must still succeed."""
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as with_ext, Archive(path, extension=False) as without:
        a = without.add_message("s", "user", "第一条 upd1x")
        assert with_ext.indexes.catch_up() is True and with_ext.indexes.live() == {"cjk", "unicode61", "trigram"}
        b = without.add_message("s", "user", "第二条 upd2x")  # would hit "no such tokenizer" unhandled
        without.update_message(a, content="第一条改了 upd3x")
        without.bulk_import([{"role": "user", "content": "第三条 upd4x"}], session_id="s")
        assert "cjk" not in with_ext.indexes.live()
        assert with_ext.indexes.catch_up() is True
        assert cjk_rowids(with_ext, "upd2x") == {b} and cjk_rowids(with_ext, "upd3x") == {a}
        assert cjk_rowids(with_ext, "upd1x") == set() and len(cjk_rowids(with_ext, "upd4x")) == 1
        assert_cjk_index_matches_table(with_ext)


def test_failed_load_warns_and_works_like_extension_false(tmp_path, monkeypatch):
    import cjk_tokenizer.archive as archive_mod
    from cjk_tokenizer.errors import ExtensionError

    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.add_message("s", "user", "有扩展的时候")

    def broken(conn):
        raise ExtensionError("host built without extension loading")

    monkeypatch.setattr(archive_mod, "load", broken)
    with pytest.warns(RuntimeWarning, match="without the cjk index: host built without"):
        ar = Archive(path)
    with ar:
        assert not ar.extension_loaded and "without extension loading" in ar.extension_error
        assert ar.indexes.status()["cjk"]["status"] == "live" and "cjk" not in ar.indexes.live()
        mid = ar.add_message("s", "user", "没有扩展的时候 upd1x")
        assert ar.indexes.status()["cjk"]["status"] == "stale"
    monkeypatch.undo()
    with Archive(path) as ar:
        assert cjk_rowids(ar, "upd1x") == {mid}
        assert_cjk_index_matches_table(ar)


@pytest.mark.parametrize("indexes", [("cjk", "unicode61", "trigram"), ("cjk", "unicode61")])
def test_without_the_extension_a_short_word_glued_to_cjk_text_is_found_whatever_the_indexes(tmp_path, indexes):
    # unicode61 sees 修改go服务 as one token and trigram cannot look up a word under 3 characters:
    # the router checks the rows instead, so adding the trigram index loses nothing
    path = tmp_path / "a.db"
    texts = ["修改go服务", "用js写", "go home", "好👍🏽的", "👍🏽 ok", "good jsx"]
    with Archive(path, indexes=indexes) as ar:
        ids = [ar.add_message("s", "user", t) for t in texts]
        with_extension = {q: [h.message_id for h in ar.search(q, sort="newest")] for q in ("go", "js", '"👍🏽"')}
    want = {"go": [ids[2], ids[0]], "js": [ids[1]], '"👍🏽"': [ids[4], ids[3]]}  # newest first
    assert with_extension == want
    with Archive(path, extension=False) as ar:
        for q in want:
            assert [h.message_id for h in ar.search(q, sort="newest")] == want[q], q
            assert sorted(h.message_id for h in ar.search(q)) == sorted(want[q]), q
        assert ar.search("js", route="unicode61")[0].message_id == ids[1]


@pytest.mark.parametrize("indexes", [("cjk", "unicode61", "trigram"), ("cjk", "unicode61")])
def test_without_the_extension_a_word_glued_to_cjk_text_is_found_in_any_accent_and_width(tmp_path, indexes):
    # without trigram every non-ASCII row is checked: every spelling; with it, the word's
    # trigram lookup finds the uniform ones (compiler.py's one gap: 修改ｃafe服务, 修改café服务
    # hold no trigram of cafe) -- mixed terms narrow by their CJK text, so find them all
    path = tmp_path / "a.db"
    texts = ["修改café服务", "修改cafe服务", "修改ｃafe服务", "修改CAFÉ服务", "修改Ｃａｆｅ服务", "cafe au lait", "修改caffe服务"]
    with Archive(path, indexes=indexes) as ar:
        ids = [ar.add_message("s", "user", t) for t in texts]
    every = "trigram" not in indexes
    with Archive(path, extension=False) as ar:
        for query, want in (("cafe", ids[:6] if every else [ids[1], ids[4], ids[5]]), ("修改cafe", ids[:5]),
                            ('"cafe 服务"', ids[:5])):
            assert sorted(h.message_id for h in ar.search(query, sort="newest")) == want, query


def test_an_absent_cjk_index_drops_without_the_extension(tmp_path):
    # it has no table to drop, yet drop asked for the tokenizer, while opening with an
    # index set without it told the user to call drop
    import warnings

    from cjk_tokenizer import Archive
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with Archive(tmp_path / "a.db", extension=False) as ar:
            ar.add_message("s", "user", "部署")
            assert ar.indexes.status()["cjk"]["status"] == "absent"
            ar.indexes.drop("cjk")
            assert "cjk" not in ar.indexes.status()
        with Archive(tmp_path / "a.db", extension=False, indexes=("unicode61", "trigram")) as ar:
            assert set(ar.indexes.status()) == {"unicode61", "trigram"}
            assert [h.message_id for h in ar.search("部署")] == [1]
