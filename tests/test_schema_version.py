"""Schema versions: an archive records the lowest version whose readers can use it.

A cjk table created with ``unigrams 1`` or ``fold_variants 1`` cannot be opened
by a release whose tokenizer predates those options (SQLite fails in the
tokenizer's constructor on the first statement touching it).  Such archives
say version 2, which those releases refuse with a one-line error; archives
without them stay version 1, so older releases keep reading them, and this
release opens both and changes neither version on its own.
"""
from __future__ import annotations

import warnings

import apsw
import pytest

from cjk_tokenizer import Archive, ArchiveError
from cjk_tokenizer.schema import READABLE_VERSIONS, SCHEMA_VERSION

OLD_DDL = ("CREATE VIRTUAL TABLE messages_fts_cjk USING fts5(content, reasoning, tool_name, tool_calls, "
           "content='messages', content_rowid='id', tokenize='cjk_unicode61 remove_diacritics 2')")


def _version(path) -> int:
    conn = apsw.Connection(str(path))
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _cjk_ddl(ar) -> str | None:
    row = ar.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_cjk'").fetchone()
    return row and row[0]


def _without_extension(path, **kw) -> Archive:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return Archive(path, extension=False, **kw)


@pytest.mark.parametrize("options, version", [
    ({}, 2),                                              # unigrams 1 is the default
    ({"cjk_unigrams": False}, 1),                         # what every earlier release created
    ({"cjk_unigrams": False, "fold_variants": True}, 2),  # fold_variants 1 is as new
    ({"cjk_unigrams": False, "cjk_prefix": True}, 1),     # prefix='1' is FTS5's own: any reader has it
])
def test_a_new_archive_records_the_version_its_cjk_table_needs(tmp_path, options, version):
    path = tmp_path / "a.db"
    with Archive(path, **options) as ar:
        ar.add_message("s", "user", "部署失败了")
    assert _version(path) == version
    with Archive(path) as ar:  # reopened by this release: read and written as before, version kept
        ar.add_message("s", "assistant", "已回滚")
        assert [h.message_id for h in ar.search("回滚")] == [2]
        assert ar.indexes.integrity_check()["cjk"] == "ok"
    assert _version(path) == version


def test_an_archive_without_a_cjk_table_is_version_1_until_one_is_created(tmp_path):
    path = tmp_path / "a.db"
    with _without_extension(path) as ar:
        ar.add_message("s", "user", "部署失败了")
        assert _cjk_ddl(ar) is None
    assert _version(path) == 1  # a release without the new options can still open it
    with Archive(path) as ar:  # the extension is here: the configured cjk index gets its table
        assert "unigrams 1" in _cjk_ddl(ar) and ar.indexes.status()["cjk"]["status"] == "live"
    assert _version(path) == 2


def test_an_existing_version_1_archive_keeps_its_table_and_version_until_the_table_is_recreated(tmp_path):
    path = tmp_path / "old.db"
    with Archive(path, cjk_unigrams=False) as ar:
        ar.add_message("s", "user", "部署失败了")
    with Archive(path) as ar:  # this release's default is unigrams 1: an existing table keeps its DDL
        assert _cjk_ddl(ar).endswith("tokenize='cjk_unicode61 remove_diacritics 2')")
        assert ar.indexes.rebuild("cjk") is True
    assert _version(path) == 1
    with Archive(path) as ar:  # recreating the index is what takes the new option, and the new version
        ar.indexes.drop("cjk")
        assert _version(path) == 1
        ar.indexes.add("cjk")
        assert ar.indexes.catch_up() is True
        assert "unigrams 1" in _cjk_ddl(ar) and [h.message_id for h in ar.search("部署")] == [1]
    assert _version(path) == 2


def test_an_archive_made_by_hand_with_the_old_ddl_opens_read_write_and_read_only(tmp_path):
    path = tmp_path / "hand.db"
    with Archive(path, cjk_unigrams=False) as ar:
        ar.add_message("s", "user", "东京の天気")
        assert _cjk_ddl(ar).replace("IF NOT EXISTS ", "") == OLD_DDL
    for readonly in (True, False):
        with Archive(path, readonly=readonly) as ar:
            assert [h.message_id for h in ar.search("天気")] == [1]
    assert _version(path) == 1


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 99])
def test_a_newer_version_is_refused_in_one_line_and_left_untouched(tmp_path, version):
    path = tmp_path / "future.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "部署")
        ar.conn.execute(f"PRAGMA user_version = {version}")
    for readonly in (None, True):
        with pytest.raises(ArchiveError) as info:
            Archive(path, readonly=readonly)
        message = str(info.value)
        assert "\n" not in message and f"schema version {version}" in message
        assert all(str(v) in message for v in READABLE_VERSIONS) and "upgrade" in message
    assert _version(path) == version


def test_folding_is_version_2_even_before_the_cjk_table_exists(tmp_path):
    # without the extension no cjk table is made yet; an older release must still refuse the folding archive
    from cjk_tokenizer.schema import user_version

    with Archive(tmp_path / "f.db", fold_variants=True, extension=False) as ar:
        assert user_version(ar.conn) == 2


@pytest.mark.parametrize("options", [{}, {"fold_variants": True}])
def test_an_archive_a_release_left_at_version_1_with_a_version_2_table_is_raised_at_its_next_open(tmp_path, options):
    # releases that added unigrams 1 and fold_variants 1 recorded no version for them:
    # a release that predates the options then failed inside SQLite instead of refusing
    path = tmp_path / "a.db"
    with Archive(path, **options) as ar:
        ar.add_message("s", "user", "部署失败了")
        ar.conn.execute("PRAGMA user_version = 1")
    with Archive(path, readonly=True) as ar:  # reading changes nothing
        assert [h.message_id for h in ar.search("部署")] == [1]
    assert _version(path) == 1
    with Archive(path) as ar:
        assert [h.message_id for h in ar.search("部署")] == [1]
    assert _version(path) == 2


def test_a_refused_fold_variants_open_changes_nothing(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "项目")
    with pytest.raises(ArchiveError, match="fold_variants"):
        Archive(path, fold_variants=True, indexes=("cjk", "unicode61", "trigram"))
    with Archive(path) as ar:
        assert set(ar.indexes.status()) == {"cjk", "unicode61"}


def test_an_archive_restored_from_a_dump_says_how_to_open_it(tmp_path, sqlite3_shell):
    # the shell's .dump leaves user_version out: the copy was called "not a cjk_tokenizer archive"
    import subprocess

    path, copy = tmp_path / "a.db", tmp_path / "restored.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "部署失败了")
    dump = subprocess.run([sqlite3_shell, str(path), ".dump"], capture_output=True, text=True, timeout=60).stdout
    subprocess.run([sqlite3_shell, str(copy)], input=dump, capture_output=True, text=True, timeout=60, check=True)
    with pytest.raises(ArchiveError, match=r"no schema version .* 'PRAGMA user_version = 2'") as err:
        Archive(copy)
    assert "\n" not in str(err.value)
    subprocess.run([sqlite3_shell, str(copy), "PRAGMA user_version = 2"], check=True, timeout=60)
    with Archive(copy) as ar:
        assert [h.message_id for h in ar.search("部署")] == [1]
