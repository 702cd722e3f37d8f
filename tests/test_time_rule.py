"""One time rule: every entry point that takes a time reads the same value the same way.

The same values go to the rule itself (timeutil.epoch_seconds), to message
timestamps and session start times (records), to ``after``/``before`` of
``Archive.search`` and ``session_search``, to the agent tool and to the CLI's
``--after``/``--before``; each must land on the same instant, and each bad
value must be a one-line error naming the argument, never a traceback or a
silently empty result.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re

import pytest

import cjk_tokenizer
from cjk_tokenizer import Archive, InputError, QueryError, TimeValueError
from cjk_tokenizer.agent_tool import handle_session_search
from cjk_tokenizer.cli import main
from cjk_tokenizer.timeutil import MAX_EPOCH, epoch_seconds

T0 = 1714521600.0  # 2024-05-01T00:00:00Z
PLUS8 = dt.timezone(dt.timedelta(hours=8))

# value -> epoch seconds it must mean everywhere (naive values are UTC)
GOOD = [
    ("2024-05-01", T0),
    ("2024-05-01T00:00:00Z", T0),
    ("2024-05-01T08:00:00+08:00", T0),
    ("2024-05-01T00:00:00", T0),
    ("2024-05-01 00:00:30.5", T0 + 30.5),
    (" 1714521600 ", T0),
    ("1714521600.25", T0 + 0.25),
    (1714521600, T0),
    (T0 + 60, T0 + 60),
    (dt.datetime(2024, 5, 1), T0),
    (dt.datetime(2024, 5, 1, 8, tzinfo=PLUS8), T0),
    (dt.date(2024, 5, 1), T0),
    # read the same on every Python (datetime.fromisoformat took none of these before 3.11)
    ("2024-W18-3", T0), ("2024-122T00:00Z", T0), ("20240501T080000+0800", T0), ("2024-05-01T08:00:00+08", T0),
    ("2024-05-01T00:00:30,5Z", T0 + 30.5), ("2024-05-01T00:00:30.500000000Z", T0 + 30.5),
    ("2024-05-01t00:00z", T0),
]
BAD = [True, "yesterday", "", float("nan"), float("inf"), 10**400, -1, 1714521600000, "1e400", "2024-13-01",
       [T0], object(),
       # digits a person types as a year or a basic date, which read as seconds into 1970 would filter nothing
       "2024", " 20240101 ", "2024123",
       "2024-02-30", "2024-05-01T24:00", "2024-W54-1", "2023-366", "2024-05-01Z", "2024-05-01T08:00+24:00",
       "\uff12\uff10\uff12\uff14-05-01", "+2024",
       "\u0661\u0667\u0661\u0664\u0665\u0662\u0661\u0666\u0660\u0660"]  # epoch seconds in Arabic-Indic digits


def _id(v):
    return f"{type(v).__name__}:{v!r}"[:40]


def _json_able(v):
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


@pytest.fixture(scope="module")
def ar(tmp_path_factory):
    a = Archive(tmp_path_factory.mktemp("time") / "t.db")
    # one message a minute apart around T0: the filters pick by instant
    for k in range(-2, 3):
        a.add_message("s", "user", f"needle {k}", timestamp=T0 + 60 * k)
    yield a
    a.close()


def _search_ids(ar, **kw):
    return sorted(h.message_id for h in ar.search("needle", **kw))


def _cli_ids(ar, option, value):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["search", ar.path, "needle", option, str(value), "--json"]) == 0
    return sorted(h["message_id"] for h in json.loads(out.getvalue()))


def _tool_ids(ar, name, value):
    result = json.loads(handle_session_search(ar, {"query": "needle", name: value, "window": 0}))
    assert "error" not in result, result
    return result["hits_considered"]


@pytest.mark.parametrize("value, expected", GOOD, ids=[_id(v) for v, _ in GOOD])
def test_every_entry_point_reads_a_time_the_same_way(ar, tmp_path, value, expected):
    assert epoch_seconds(value, "x") == expected
    # records: message timestamps and session start times
    with Archive(tmp_path / "w.db") as w:
        mid = w.add_message("m", "user", "x", timestamp=value)
        assert w.get_message(mid)["timestamp"] == expected
        w.add_session("h", started_at=value)
        assert w.session("h")["started_at"] == expected
        w.update_message(mid, timestamp=value)
        assert w.get_message(mid)["timestamp"] == expected
    # search: after is inclusive, before exclusive
    ts = {m["id"]: m["timestamp"] for m in ar.messages_of("s")}
    want_after = sorted(i for i, t in ts.items() if t >= expected)
    want_before = sorted(i for i, t in ts.items() if t < expected)
    assert _search_ids(ar, after=value) == want_after
    assert _search_ids(ar, before=value) == want_before
    # session_search and the agent tool
    out = ar.session_search(query="needle", after=value, window=0)
    assert out["hits_considered"] == len(want_after), out
    out = ar.session_search(query="needle", before=value, window=0)
    assert out.get("hits_considered", 0) == len(want_before), out
    if _json_able(value):
        assert _tool_ids(ar, "after", value) == len(want_after)
        # the CLI takes text: the same string means the same instant
        assert _cli_ids(ar, "--after", value) == want_after
        assert _cli_ids(ar, "--before", value) == want_before


@pytest.mark.parametrize("value", BAD, ids=[_id(v) for v in BAD])
def test_every_entry_point_refuses_a_bad_time_naming_the_argument(ar, tmp_path, value):
    with pytest.raises(TimeValueError, match="^x"):
        epoch_seconds(value, "x")
    with Archive(tmp_path / "w.db") as w:
        with pytest.raises(InputError, match="timestamp") as exc:
            w.add_message("m", "user", "x", timestamp=value)
        assert "\n" not in str(exc.value)
        with pytest.raises(InputError, match="started_at"):
            w.add_session("h", started_at=value)
        assert w.count_messages() == 0 and w.session("h") is None
    for name in ("after", "before"):
        with pytest.raises(QueryError, match=name):
            ar.search("needle", **{name: value})
        err = ar.session_search(query="needle", **{name: value})["error"]
        assert err["code"] == "bad_argument" and err["argument"] == name, err
        if _json_able(value) and value == value:  # JSON has no NaN
            err = json.loads(handle_session_search(ar, {"query": "needle", name: value}))["error"]
            assert err["code"] == "bad_argument" and err["argument"] == name, err


@pytest.mark.parametrize("value", ["yesterday", "1714521600000", "2024-05-01T25:00", "20240101"])
def test_cli_refuses_a_bad_time_in_one_line_naming_the_option(ar, capsys, value):
    assert main(["search", ar.path, "needle", "--before", value]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--before" in err and "Traceback" not in err


def test_an_empty_range_shows_both_times_as_iso_on_every_entry_point(ar, capsys):
    """The same empty range reads the same everywhere: as the ISO times the values mean,
    not as epoch seconds the caller never typed (the CLI converts its options first)."""
    want = ("2024-06-01T00:00:00Z", "2024-05-01T00:00:00Z")
    assert main(["search", ar.path, "needle", "--after", "2024-06-01", "--before", "2024-05-01"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and all(t in err for t in want), err
    with pytest.raises(QueryError) as exc:
        ar.search("needle", after=T0 + 31 * 86400, before=T0)
    assert all(t in str(exc.value) for t in want), exc.value
    tool = json.loads(handle_session_search(ar, {"query": "needle", "after": "2024-06-01", "before": "2024-05-01"}))
    assert all(t in tool["error"]["message"] for t in want), tool


def test_naive_means_utc_whatever_the_machine_zone(tmp_path):
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    try:
        import time
        time.tzset()
        assert epoch_seconds(dt.datetime(2024, 5, 1), "t") == T0
        with Archive(tmp_path / "z.db") as w:
            mid = w.add_message("m", "user", "x", timestamp=dt.datetime(2024, 5, 1))
            assert w.get_message(mid)["timestamp"] == T0
    finally:
        if old is None:
            os.environ.pop("TZ")
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_range_edges():
    assert epoch_seconds(0, "t") == 0.0
    assert epoch_seconds(MAX_EPOCH, "t") == float(MAX_EPOCH)
    assert epoch_seconds("9999-12-31T23:59:59Z", "t") == float(MAX_EPOCH)
    # the last second's fractions, datetime.max among them (a common "no end"), were refused
    for value in (dt.datetime.max, "9999-12-31T23:59:59.5Z", MAX_EPOCH + 0.999):
        assert epoch_seconds(value, "t") == float(MAX_EPOCH)
    for value in (MAX_EPOCH + 1, "0001-01-01T00:00:00+01:00", dt.datetime(1, 1, 1, tzinfo=PLUS8)):
        with pytest.raises(TimeValueError, match="outside the accepted range"):
            epoch_seconds(value, "t")


def test_no_second_time_parser_in_the_package():
    """The rule lives in timeutil.py alone: nothing else parses ISO text or converts datetimes."""
    pkg = os.path.dirname(os.path.abspath(cjk_tokenizer.__file__))  # the package under test, wherever it is
    pattern = re.compile(r"fromisoformat|\.timestamp\(\)|strptime")
    offenders = []
    for folder, _, names in os.walk(pkg):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".py") and path != os.path.join(pkg, "timeutil.py"):
                with open(path, encoding="utf-8") as f:
                    offenders += [f"{os.path.relpath(path, pkg)}:{n}" for n, line in enumerate(f, 1)
                                  if pattern.search(line)]
    assert offenders == []
