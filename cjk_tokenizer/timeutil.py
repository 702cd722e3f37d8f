"""The one time rule: every time value the package accepts becomes epoch seconds here.

Message timestamps, session start times, ``after``/``before`` of
``Archive.search`` and ``session_search``, the agent tool and the command line
all go through :func:`epoch_seconds`, so a value means the same everywhere.

Accepted (anything else is a :class:`~cjk_tokenizer.errors.TimeValueError`
naming the argument):

* epoch seconds: an ``int`` or ``float`` (``bool`` is refused), or a string
  holding one (``"1714521600"``, ``" 1714521600.5 "``).  A string of 4 to 8
  digits alone (``"2024"``, ``"20240101"``) is refused as ambiguous: it reads
  as a year or an ISO-8601 basic date just as well as seconds into 1970-73;
* an ISO-8601 string, read here the same on every Python (not by
  ``datetime.fromisoformat``, whose forms grew in 3.11): a calendar
  (``2024-05-01``), week (``2024-W18-3``) or ordinal (``2024-122``) date,
  extended or basic (``20240501T0830Z``), then optionally ``T`` or a space
  and ``hh``, ``hh:mm`` or ``hh:mm:ss`` with any fraction of a second
  (``.5``, ``,123456789``), then optionally ``Z``, ``±hh``, ``±hhmm`` or
  ``±hh:mm``: ``2024-05-01T08:30``, ``2024-05-01 08:30:00.5``,
  ``2024-05-01T08:30:00Z``, ``…+08:00``;
* a ``datetime.datetime`` or ``datetime.date``.

A value without a zone (a naive datetime, an ISO string without ``Z`` or an
offset, a date alone) means UTC -- never the machine's local time, so an
archive reads the same on every machine.  A date alone is its midnight UTC.

The result must lie in ``MIN_EPOCH .. MAX_EPOCH`` (1970-01-01T00:00:00Z to
9999-12-31T23:59:59Z; a time within that last second, such as ``datetime.max``,
reads as it): milliseconds passed as seconds, NaN and infinities
are refused instead of stored or compared.  :func:`iso` is the way back, for
every time the package shows (results, errors).
"""
from __future__ import annotations

import calendar
import datetime as _dt
import re

from typing import Union

from .errors import TimeValueError, shown

# What every time argument accepts (epoch seconds, ISO-8601 text, a datetime or date)
TimeValue = Union[float, str, _dt.date]

__all__ = ["MAX_EPOCH", "MIN_EPOCH", "FORMATS_HELP", "TimeValue", "epoch_seconds"]

MIN_EPOCH = 0
MAX_EPOCH = 253402300799  # 9999-12-31T23:59:59Z
# For --help texts and error messages: what a user may type.
FORMATS_HELP = "ISO-8601 (2024-05-01, 2024-05-01T08:30:00Z, +08:00; no zone = UTC) or epoch seconds"

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)  # ASCII digits only
# Digits alone that a person means as a year (2024) or a basic date (2024123,
# 20240101) far more often than as a time in 1970-73.
_DATE_LIKE = re.compile(r"[+]?\d{4,8}", re.ASCII)


# ISO-8601: a date (calendar, week or ordinal; extended or basic), an optional
# time (hours, minutes, seconds, a fraction of a second) and an optional zone.
_ISO = re.compile(r"""
    (?P<year>\d{4})
    (?: -(?P<month>\d\d)-(?P<day>\d\d) | (?P<bmonth>\d\d)(?P<bday>\d\d)
      | -?W(?P<week>\d\d)-?(?P<wday>[1-7]) | -?(?P<yday>\d{3}) )
    (?: [Tt\x20] (?P<hour>\d\d) (?: :?(?P<minute>\d\d) (?: :?(?P<second>\d\d) (?:[.,](?P<frac>\d+))? )? )?
        (?P<zone> [Zz] | (?P<sign>[+-])(?P<zh>\d\d)(?::?(?P<zm>\d\d))? )? )?
    """, re.X | re.ASCII)
_EPOCH_DAY = _dt.date(1970, 1, 1).toordinal()


def _iso_seconds(text: str) -> float | None:
    """Epoch seconds of an ISO-8601 string (see the module doc), or None if it is not one."""
    m = _ISO.fullmatch(text)
    if m is None:
        return None
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    year = int(g["year"])
    try:
        if "yday" in g:
            if not 1 <= int(g["yday"]) <= (366 if calendar.isleap(year) else 365):
                return None
            day = _dt.date(year, 1, 1).toordinal() + int(g["yday"]) - 1
        elif "week" in g:
            day = _dt.date.fromisocalendar(year, int(g["week"]), int(g["wday"])).toordinal()
        else:
            day = _dt.date(year, int(g.get("month") or g["bmonth"]), int(g.get("day") or g["bday"])).toordinal()
    except ValueError:
        return None
    hour, minute, second = int(g.get("hour", 0)), int(g.get("minute", 0)), int(g.get("second", 0))
    zh, zm = int(g.get("zh", 0)), int(g.get("zm", 0))
    if hour > 23 or minute > 59 or second > 59 or zh > 23 or zm > 59:
        return None
    offset = (zh * 3600 + zm * 60) * (-1 if g.get("sign") == "-" else 1)
    fraction = float("0." + g["frac"]) if "frac" in g else 0.0
    return (day - _EPOCH_DAY) * 86400 + hour * 3600 + minute * 60 + second - offset + fraction


def _in_range(seconds, name: str, given) -> float:
    if not (MIN_EPOCH <= seconds < MAX_EPOCH + 1):  # False for NaN too
        raise TimeValueError(f"{name}={shown(given)} is outside the accepted range: epoch seconds from "
                             f"{MIN_EPOCH} to {MAX_EPOCH} (1970-01-01 .. 9999-12-31 UTC)")
    # within the last second of 9999 (datetime.max, a common "no end"): that second, which a date can say
    return float(min(seconds, MAX_EPOCH))


_LAST_SECOND = _dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=_dt.timezone.utc)


def _from_datetime(value, name: str) -> float:
    if not isinstance(value, _dt.datetime):  # a date: its midnight UTC
        value = _dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    try:
        # datetime.max's microseconds round to the next second as a float: its whole second, first
        seconds = min(value, _LAST_SECOND).timestamp()
    except (OverflowError, ValueError, OSError):  # an offset pushing year 1 / 9999 past the edge
        raise TimeValueError(f"{name}={value.isoformat()!r} is outside the accepted range "
                             "(1970-01-01 .. 9999-12-31 UTC)") from None
    return _in_range(seconds, name, value.isoformat())


def epoch_seconds(value, name: str) -> float:
    """``value`` as seconds since the epoch (float); see the module doc for what is accepted.

    ``name`` is the argument's name, used in the error message.  ``None`` is
    not a time: callers decide what a missing value means before calling.
    """
    if isinstance(value, bool):
        raise TimeValueError(f"{name} must be epoch seconds, an ISO-8601 string or a datetime, not a bool")
    if isinstance(value, (int, float)):
        return _in_range(value, name, value)
    if isinstance(value, (_dt.datetime, _dt.date)):
        return _from_datetime(value, name)
    if isinstance(value, str):
        s = value.strip()
        if _DATE_LIKE.fullmatch(s):
            raise TimeValueError(f"{name}={value!r} is ambiguous: it reads as a year or a date as well as epoch "
                                 f"seconds; write a date as 2024-05-01, or seconds as {s.lstrip('+')}.0")
        if _NUMBER.fullmatch(s):
            return _in_range(float(s), name, value)
        seconds = _iso_seconds(s) if len(s) <= 64 else None
        if seconds is None:
            raise TimeValueError(f"{name}={value[:80]!r} is not a time: give {FORMATS_HELP}")
        return _in_range(seconds, name, value)
    raise TimeValueError(f"{name} must be epoch seconds, an ISO-8601 string or a datetime, "
                         f"not {type(value).__name__}")


def iso(ts) -> str | None:
    """Epoch seconds as ISO-8601 UTC (``2024-05-01T12:00:00Z``), or None."""
    if ts is None:
        return None
    try:
        return _dt.datetime.fromtimestamp(float(ts), _dt.timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
