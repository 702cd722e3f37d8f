"""Import rate per source format on one generated history, side by side with bulk_import.

    python bench/bench_import.py                 # 100 MB of text, every format; writes RESULTS.md
    python bench/bench_import.py --smoke         # a tiny history; checks counts, writes nothing

The corpus is bench/generate.py's (seed 1): the same sessions are rendered into
each format's files — OpenAI chat JSONL (one message per line, session
headers), a Claude Code project folder (one transcript per session), a Codex
sessions folder (one rollout per session, with the event_msg mirrors Codex
writes) and a Hermes state.db (Hermes' own schema from ``hermes_state``,
rows inserted directly, its FTS triggers dropped to keep the setup short) —
then each is imported into a fresh archive with every default index, and
imported once more (nothing new: the cost of a no-op sync).  Rendering is not
timed.  The baseline is ``Archive.bulk_import`` of the same messages as dicts.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import generate  # noqa: E402
import results  # noqa: E402

from cjk_tokenizer.archive import Archive  # noqa: E402

FORMATS = ("openai", "claude-code", "codex", "hermes")


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dump(f, obj):
    f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def render_openai(sessions, root):
    path = os.path.join(root, "history.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for s in sessions:
            _dump(f, {"type": "session", "id": s.id, "title": s.title, "source": s.source, "started_at": s.started_at})
            for m in s.messages:
                _dump(f, {k: v for k, v in m.items() if k != "id" and v is not None})
    return path


def render_claude(sessions, root):
    folder = os.path.join(root, "projects", "-home-bench")
    os.makedirs(folder)
    for s in sessions:
        with open(os.path.join(folder, f"{s.id}.jsonl"), "w", encoding="utf-8") as f:
            _dump(f, {"type": "summary", "summary": s.title, "leafUuid": "x"})
            for m in s.messages:
                env = {"sessionId": s.id, "uuid": f"{s.id}-{m['id']}", "timestamp": _iso(m["timestamp"]),
                       "cwd": "/home/bench", "gitBranch": "main", "version": "2.0.0"}
                if m["role"] == "tool":
                    _dump(f, {**env, "type": "user", "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]}})
                elif m["role"] == "assistant":
                    blocks = []
                    if m.get("reasoning"):
                        blocks.append({"type": "thinking", "thinking": m["reasoning"], "signature": "s"})
                    if m.get("content"):
                        blocks.append({"type": "text", "text": m["content"]})
                    for c in m.get("tool_calls") or []:
                        blocks.append({"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                                       "input": json.loads(c["function"]["arguments"])})
                    _dump(f, {**env, "type": "assistant", "message": {"role": "assistant", "content": blocks}})
                else:
                    _dump(f, {**env, "type": "user", "message": {"role": "user", "content": m["content"]}})
    return os.path.join(root, "projects")


def render_codex(sessions, root):
    folder = os.path.join(root, "sessions", "2025", "01", "01")
    os.makedirs(folder)
    for s in sessions:
        with open(os.path.join(folder, f"rollout-{s.id}.jsonl"), "w", encoding="utf-8") as f:
            _dump(f, {"timestamp": _iso(s.started_at), "type": "session_meta",
                      "payload": {"id": s.id, "timestamp": _iso(s.started_at), "cwd": "/home/bench",
                                  "cli_version": "0.46.0"}})
            for m in s.messages:
                ts = _iso(m["timestamp"])
                item = lambda p: _dump(f, {"timestamp": ts, "type": "response_item", "payload": p})  # noqa: E731
                if m["role"] == "tool":
                    item({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
                elif m["role"] == "assistant":
                    if m.get("reasoning"):
                        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": m["reasoning"]}]})
                    if m.get("content"):
                        item({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": m["content"]}]})
                        _dump(f, {"timestamp": ts, "type": "event_msg",
                                  "payload": {"type": "agent_message", "message": m["content"]}})
                    for c in m.get("tool_calls") or []:
                        item({"type": "function_call", "name": c["function"]["name"],
                              "arguments": c["function"]["arguments"], "call_id": c["id"]})
                else:
                    item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": m["content"]}]})
                    _dump(f, {"timestamp": ts, "type": "event_msg",
                              "payload": {"type": "user_message", "message": m["content"]}})
    return os.path.join(root, "sessions")


def render_hermes(sessions, root):
    import hermes_state
    from pathlib import Path

    path = os.path.join(root, "state.db")
    hermes_state.SessionDB(db_path=Path(path)).close()  # Hermes' own schema
    conn = sqlite3.connect(path)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f'DROP TRIGGER "{name}"')
    with conn:
        for s in sessions:
            conn.execute("INSERT INTO sessions(id, source, title, started_at, model) VALUES (?, 'cli', ?, ?, 'm')",
                         (s.id, s.title, s.started_at))
            conn.executemany(
                "INSERT INTO messages(session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, "
                "reasoning) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(s.id, m["role"], m["content"], m.get("tool_call_id"),
                  json.dumps(m["tool_calls"]) if m.get("tool_calls") else None, m.get("tool_name"),
                  m["timestamp"], m.get("reasoning")) for m in s.messages])
    conn.close()
    return path


RENDER = {"openai": render_openai, "claude-code": render_claude, "codex": render_codex, "hermes": render_hermes}


def _bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def measure(sessions, workdir, fmts):
    rows = []
    flat = [{k: v for k, v in m.items() if k != "id"} for s in sessions for m in s.messages]
    db = os.path.join(workdir, "baseline.db")
    t0, c0 = time.perf_counter(), time.process_time()
    with Archive(db) as ar:
        n = ar.bulk_import(flat)
        t1, c1 = time.perf_counter(), time.process_time()
        text = ar.indexes.sizes()["text"]
    rows.append({"format": "bulk_import (baseline)", "source_mb": None, "messages": n, "text_mb": text / 1e6,
                 "seconds": t1 - t0, "cpu": c1 - c0, "again": None, "sessions": len(sessions)})
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    for fmt in fmts:
        src_dir = os.path.join(workdir, fmt)
        os.makedirs(src_dir)
        src = RENDER[fmt](sessions, src_dir)
        db = os.path.join(workdir, f"{fmt}.db")
        with Archive(db) as ar:
            t0, c0 = time.perf_counter(), time.process_time()
            rep = ar.import_source(src)
            t1, c1 = time.perf_counter(), time.process_time()
            again = ar.import_source(src)
            c2 = time.process_time()
            text = ar.indexes.sizes()["text"]
        assert not rep.bad and again.messages == 0, (fmt, rep.summary(), again.summary())
        rows.append({"format": fmt, "source_mb": _bytes(src) / 1e6, "messages": rep.messages,
                     "sessions": len(rep.sessions), "text_mb": text / 1e6, "seconds": t1 - t0, "cpu": c1 - c0,
                     "again": c2 - c1})
        shutil.rmtree(src_dir)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
    return rows


def fmt_table(cmd, info, size, rows) -> str:
    out = [
        f"Command: `{cmd}`  ",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}  ",
        f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, "
        f"cjk_tokenizer {info['cjk_tokenizer']}  ",
        "",
        f"Corpus: bench/generate.py seed 1 at {size / 1e6:,.0f} MB of text, rendered into each format's files "
        "(not timed); each imported into a fresh archive with the default indexes (cjk and unicode61), "
        "then imported again (nothing new: the cost of a no-op `sync`). Source MB = bytes of the files read; "
        "text MB = bytes of indexed text that arrived. Rates are per CPU second of the importing process "
        "(SQLite runs in it), so they hold on a shared machine; wall seconds are shown beside them. Message "
        "counts differ by format: Codex splits an assistant turn into reasoning, text and call items.",
        "",
        "| source | source MB | sessions | messages | text MB | wall s | CPU s | source MB per CPU s | "
        "messages per CPU s | re-import CPU s | CPU × baseline |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = rows[0]["cpu"]
    for r in rows:
        src = f"{r['source_mb']:,.1f}" if r["source_mb"] else "—"
        rate = f"{r['source_mb'] / r['cpu']:,.2f}" if r["source_mb"] else "—"
        again = f"{r['again']:,.1f}" if r["again"] is not None else "—"
        out.append(f"| {r['format']} | {src} | {r['sessions']:,} | {r['messages']:,} | {r['text_mb']:,.1f} | "
                   f"{r['seconds']:,.1f} | {r['cpu']:,.1f} | {rate} | {r['messages'] / r['cpu']:,.0f} | {again} | "
                   f"{r['cpu'] / base:.2f} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="100MB", help="corpus text size (default 100MB)")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", help="scratch folder (default: a temporary one)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--smoke", action="store_true", help="200 KB corpus; checks the imports, writes no results")
    args = ap.parse_args(argv)
    size = generate.parse_size("200KB" if args.smoke else args.size)
    fmts = [f for f in args.formats.split(",") if f]
    sessions = list(generate.Corpus(size, args.seed).sessions())
    with tempfile.TemporaryDirectory(dir=args.workdir) as wd:
        rows = measure(sessions, wd, fmts)
    for r in rows:
        print(f"{r['format']:>24}: {r['messages']:,} messages in {r['seconds']:.1f} s ({r['cpu']:.1f} s CPU)"
              + (f", again {r['again']:.1f} s CPU" if r["again"] is not None else ""))
    if args.smoke:
        return 0
    import bench_index

    cmd = ("nice -n 10 python bench/bench_import.py " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    results.update_section(args.results, "import", fmt_table(cmd, bench_index.machine_info(), size, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
