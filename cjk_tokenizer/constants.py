"""The names every entry point accepts, and the defaults they share, each defined once.

The API validates against these tuples, the CLI offers them as choices, and
the agent tool's JSON Schema lists them as enums, so a name added here is
accepted everywhere at once (tests/test_constants.py checks that nothing
keeps its own copy).  This module imports nothing: the CLI reads it before
anything heavier is loaded.
"""
from __future__ import annotations

# Roles a message may have.  'developer' is OpenAI's newer name for system
# instructions; the legacy 'function' role is stored as 'tool' (records.py).
ROLES = ("system", "developer", "user", "assistant", "tool")

# Orders of search results: bm25 rank, or message id (newest/oldest first).
SORTS = ("relevance", "newest", "oldest")
DEFAULT_SORT = "relevance"

# The FTS5 indexes an archive can have (schema.FTS_INDEXES says how each is
# built), and every route a query can take: those plus the LIKE scan of the
# messages table, which needs no index.
FTS_ROUTES = ("cjk", "unicode61", "trigram")
SCAN = "scan"
ROUTES = (*FTS_ROUTES, SCAN)

# How tokens.tokenize() can run the tokenizer: the FTS5 tokenize flags
# document, query, query|prefix and aux, by name.
TOKENIZE_MODES = ("document", "query", "prefix", "aux")

# Bytes of an archive SQLite reads through a memory map (PRAGMA mmap_size) by
# default.  A LIKE scan (the scan route) reads every page of the messages, and
# a long message spans overflow pages SQLite's page cache never keeps: without
# the map each costs a system call and a copy.  Mapped pages are the OS's file
# cache, shared and reclaimable; address space is what this reserves, and
# 16 GiB covers the archive of a history of several GB.  A host built with a
# lower SQLITE_MAX_MMAP_SIZE uses its own cap.
MMAP_SIZE = 1 << 34
