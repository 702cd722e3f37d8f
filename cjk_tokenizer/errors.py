"""The exceptions cjk_tokenizer raises."""


class CjkTokenizerError(Exception):
    """Base class of every error this package raises on purpose."""


class ExtensionError(CjkTokenizerError):
    """The extension could not be loaded into this SQLite connection.

    The message says why: the host was built without extension loading, FTS5
    is missing, the compiled file is missing, or the host's SQLite is too old.
    """


class ArchiveError(CjkTokenizerError):
    """The file is not an archive this version can open, or an index operation is impossible here."""


class QueryError(CjkTokenizerError, ValueError):
    """A search query that no route can answer (for example, an empty one)."""


class TimeValueError(CjkTokenizerError, ValueError):
    """A time value (a timestamp, ``after``, ``before``, ``started_at``) that is not
    one the package accepts; the message names the argument (rules: timeutil.py)."""
