"""Hermes Agent's own session search, measured inside Hermes' own environment (run by bench_peers.py).

Runs under the Python of a virtual environment where ``hermes-agent`` is
installed as it ships, and never imports cjk_tokenizer.  It writes a
``state.db`` through ``hermes_state.SessionDB``'s public methods, the way an
agent run does (``create_session`` when a session first appears,
``append_message`` for every message, each its own transaction), from the
first ``mb`` MB of text of an OpenAI-style JSONL corpus (bench/generate.py),
then times ``SessionDB.search_messages(q, limit=20)`` (relevance) and
``sort="newest"`` for every query.

    python bench/hermes_worker.py SPEC.json    # SPEC: {"jsonl", "mb", "home", "terms", "runs"}

Prints one JSON object on stdout: Hermes' and its SQLite's versions, the
messages written and their text bytes, the write time, the file size and the
bytes of each FTS table, and per query a timing cell per sort plus the
newest-first message ids (Hermes' ids are assigned 1, 2, ... in file order).
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import sqlite3
import sys
import time

import timing

HERMES_FTS = ("messages_fts", "messages_fts_trigram")
# Hermes' FTS tables keep their own copy of the text (no content= option): _content counts.
SHADOW = ("data", "idx", "content", "docsize", "config")


def log(*a):
    print(time.strftime("%H:%M:%S"), "hermes:", *a, file=sys.stderr, flush=True)


def text_bytes(m):
    """UTF-8 bytes of the text columns the other systems index (tool_calls as JSON, non-ASCII kept)."""
    calls = json.dumps(m["tool_calls"], ensure_ascii=False) if m.get("tool_calls") else ""
    return sum(len((v or "").encode("utf-8")) for v in (m.get("content"), m.get("reasoning"), m.get("tool_name"),
                                                        calls))


def write_state(db, jsonl, limit_bytes):
    """Append messages in file order until ``limit_bytes`` of text; returns (messages, text bytes, seconds)."""
    seen, n, nbytes = set(), 0, 0
    t0 = time.perf_counter()
    with open(jsonl, encoding="utf-8") as f:
        for line in f:
            if nbytes >= limit_bytes:
                break
            m = json.loads(line)
            if m["session_id"] not in seen:
                seen.add(m["session_id"])
                db.create_session(m["session_id"], source="cli")
            db.append_message(m["session_id"], m["role"], m.get("content"), tool_name=m.get("tool_name"),
                              tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"),
                              reasoning=m.get("reasoning"), timestamp=m.get("timestamp"))
            n += 1
            nbytes += text_bytes(m)
            if n % 10_000 == 0:
                log(f"{n:,} messages, {nbytes / 1e6:.0f} MB")
    return n, nbytes, time.perf_counter() - t0


def fts_bytes(path):
    """Bytes of each FTS5 table's shadow tables (dbstat), {} if this SQLite has no dbstat."""
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN (?, ?, ?, ?, ?)",
                                [f"{t}_{s}" for s in SHADOW]).fetchone()[0] for t in HERMES_FTS}
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()


def measure(db, terms, runs):
    out = {}
    for term in terms:
        rel, _ = timing.cell(lambda: db.search_messages(term, limit=20), runs)
        new, hits = timing.cell(lambda: db.search_messages(term, limit=20, sort="newest"), runs)
        out[term] = {"relevance": rel, "newest": new, "newest_ids": [h["id"] for h in hits]}
        log(term, f"relevance {rel['p50'] * 1e3:.2f} ms, newest {new['p50'] * 1e3:.2f} ms, {new['n']} hits")
    return out


def main(spec_path):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    os.environ["HERMES_HOME"] = spec["home"]  # before hermes_state reads it
    from pathlib import Path

    import hermes_state

    path = os.path.join(spec["home"], "state.db")
    db = hermes_state.SessionDB(db_path=Path(path))
    n, nbytes, seconds = write_state(db, spec["jsonl"], int(spec["mb"] * 1e6))
    db.close()  # checkpoints the WAL into the file
    conn = sqlite3.connect(path)
    try:
        max_id = conn.execute("SELECT max(id) FROM messages").fetchone()[0]
    finally:
        conn.close()
    log(f"wrote {n:,} messages ({nbytes / 1e6:.1f} MB of text) in {seconds:.1f} s")
    db = hermes_state.SessionDB(db_path=Path(path))
    try:
        queries = measure(db, spec["terms"], spec["runs"])
    finally:
        db.close()
    return {"hermes_agent": importlib.metadata.version("hermes-agent"), "sqlite": sqlite3.sqlite_version,
            "python": sys.version.split()[0], "messages": n, "max_id": max_id, "text_bytes": nbytes,
            "write_seconds": seconds, "file_bytes": os.path.getsize(path), "fts_bytes": fts_bytes(path),
            "queries": queries, "imported_cjk_tokenizer": "cjk_tokenizer" in sys.modules}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1]), ensure_ascii=False))
