"""The exceptions cjk_tokenizer raises."""


class CjkTokenizerError(Exception):
    """Base class of every error this package raises on purpose about data, files,
    queries or the host.  An argument of the wrong type or outside its documented
    values (``Archive(busy_timeout=-1)``, ``tokenize(mode="x")``) is a plain
    TypeError or ValueError, as in the standard library."""


class ExtensionError(CjkTokenizerError):
    """The extension could not be loaded into this SQLite connection.

    The message says why: the host was built without extension loading, FTS5
    is missing, the compiled file is missing, or the host's SQLite is too old.
    """


class ArchiveError(CjkTokenizerError):
    """The file is not an archive this version can open, or an index operation is impossible here."""


class QueryError(CjkTokenizerError, ValueError):
    """A search query that no route can answer (for example, an empty one)."""


class ImportFileError(CjkTokenizerError, ValueError):
    """A source cannot be imported at all; the message names it (and the line, if one)."""


class TimeValueError(CjkTokenizerError, ValueError):
    """A time value that is not one the package accepts, from ``timeutil.epoch_seconds``;
    the message names the argument (rules: timeutil.py).  Archive methods re-raise
    it as the error of their kind, with the same message: InputError for a message's
    ``timestamp`` or a session's ``started_at``, QueryError for ``after``/``before``
    of a search; session_search returns it as an error result."""


def shown(value, limit: int = 80) -> str:
    """``repr(value)`` for an error message, at most ``limit`` characters.

    An error names the value a caller got wrong without quoting it at any
    length, and an integer too long for Python to write as text (over 4,300
    digits: ``sys.get_int_max_str_digits``) is described by its size instead
    of raising ``ValueError`` from inside the message."""
    if isinstance(value, int) and value.bit_length() > 256:
        sign = "a negative" if value < 0 else "an"
        return f"{sign} integer of about {round(value.bit_length() * 0.30103):,} digits"
    try:
        text = repr(value[:limit + 1] if isinstance(value, (str, bytes)) else value)
    except ValueError:  # such an integer inside a collection
        return f"a {type(value).__name__} holding an integer too long to write"
    except RecursionError:  # collections nested past what repr can walk
        return f"a {type(value).__name__} nested too deeply to write"
    return text if len(text) <= limit else text[:limit - 3] + "..."
