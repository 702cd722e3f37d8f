"""Small deterministic multilingual messages for the archive tests.

Not a test module: test_archive_*.py put this directory on sys.path and import
it (conftest.py is fixtures only).  Every message carries a unique Latin
marker ``mk<n>z`` in its content (``rk<n>z`` in its reasoning) so a test can find each one exactly, and CJK text drawn from
a small pool so CJK substrings recur across messages (which makes phrase
queries return several rows, as real ones do).
"""
from __future__ import annotations

import random

HAN = "部署失败回滚服务器数据库配置文件日志错误修改测试用户请求大别山风景时间问题解决方案中文检索"
KANA = "デプロイのサーバーをかくにんしてくださいエラーがでました"
HANGUL = "서버배포실패로그확인데이터베이스설정"
WORDS = ("deploy", "rollback", "kubectl", "error", "timeout", "config", "server", "retry", "cache", "index",
         "Python", "SELECT", "def", "return", "null", "true", "json", "path", "résumé", "naïve")


def marker(n: int) -> str:
    return f"mk{n}z"


def _cjk_run(rng: random.Random) -> str:
    pool = rng.choice((HAN, HAN, KANA, HANGUL))
    start = rng.randrange(len(pool) - 2)
    return pool[start:start + rng.randint(2, 8)]


def text(rng: random.Random, mark: str, words: int = 12) -> str:
    """A message body: CJK runs, words, code bits and the unique token ``mark``."""
    parts = []
    for _ in range(words):
        r = rng.random()
        if r < 0.45:
            parts.append(_cjk_run(rng))
        elif r < 0.85:
            parts.append(rng.choice(WORDS))
        else:
            parts.append(f"{rng.choice(WORDS)}_{rng.randint(0, 99)}()")
    body = rng.choice((" ", "", "，", "。", "\n")).join(parts)
    # The marker stands apart so every index (unicode61 too) sees it as one token.
    return f"{mark} {body}" if rng.random() < 0.5 else f"{body} {mark}"


def message(rng: random.Random, n: int, session_id: str) -> dict:
    """An OpenAI-style dict for bulk_import: user/assistant/tool, sometimes with reasoning."""
    role = rng.choice(("user", "assistant", "assistant", "tool"))
    msg = {"session_id": session_id, "role": role, "content": text(rng, marker(n)), "timestamp": 1_700_000_000.0 + n}
    if role == "assistant" and rng.random() < 0.4:
        msg["reasoning_content"] = text(rng, f"rk{n}z", words=6)
    if role == "tool":
        msg["tool_call_id"] = f"call_{n}"
        msg["name"] = rng.choice(("shell", "read_file", "search"))
    return msg


def messages(count: int, *, seed: int = 7, sessions: int = 5, start: int = 0):
    rng = random.Random(seed)
    return [message(rng, n, f"s{n % sessions}") for n in range(start, start + count)]


def cjk_substrings(content: str, rng: random.Random, k: int = 2) -> list[str]:
    """Up to ``k`` CJK substrings (2-4 characters) of ``content``, for phrase queries."""
    runs, cur = [], ""
    pool = set(HAN + KANA + HANGUL)
    for ch in content:
        if ch in pool:
            cur += ch
        else:
            if len(cur) >= 2:
                runs.append(cur)
            cur = ""
    if len(cur) >= 2:
        runs.append(cur)
    out = []
    for _ in range(k):
        if not runs:
            break
        run = rng.choice(runs)
        size = rng.randint(2, min(4, len(run)))
        start = rng.randrange(len(run) - size + 1)
        out.append(run[start:start + size])
    return out
