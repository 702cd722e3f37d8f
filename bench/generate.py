"""Deterministic generator of agent-like session archives for the benchmarks.

``Corpus(size_bytes, seed)`` yields OpenAI-style message dicts, grouped by
session, until the text it has produced reaches ``size_bytes`` (UTF-8 bytes of
content + reasoning + tool_name + tool_calls as JSON: the text the FTS indexes
cover).  The same size and seed always give the same corpus (for one Python
version and one jieba dict.txt).

    corpus = Corpus(500 * 10**6, seed=1)
    for session in corpus.sessions():      # Session(id, title, source, started_at, messages)
        archive_import(session.messages)   # each message is a dict, see below
    corpus.needles                         # planted rare strings and their message ids
    corpus.stats                           # bytes by role / field / kind

A message dict has the keys ``id`` (1-based ordinal in the stream: the rowid an
archive assigns when it imports the stream in order into an empty table),
``session_id``, ``role`` (user / assistant / tool), ``content``, ``reasoning``
(str or None), ``tool_calls`` (OpenAI list of ``{"id", "type": "function",
"function": {"name", "arguments"}}`` or None), ``tool_name`` and
``tool_call_id`` (tool messages), and ``timestamp`` (float epoch seconds,
strictly increasing over the whole stream).  ``corpus.messages()`` flattens
the sessions (``with_ids=False`` for ``Archive.bulk_import``: an empty archive
assigns the same ids); ``write_jsonl(corpus, path)`` writes one message per
line, line N being message id N.

The mix (see ``MIX`` and the measured ``stats``; RESULTS.md prints them):
  * sessions: zh 45 %, en 25 %, ja 15 %, ko 15 % by primary language;
    length 1-40 user turns (geometric, mean ~5), each turn 0-8 tool round trips.
  * Chinese: words drawn by frequency from jieba's dict.txt (349k words with
    counts), with punctuation and Latin identifiers/terms mixed in.
    Japanese: kanji compounds (jieba's 2-character words), hiragana particles
    and endings, katakana loanwords (some half-width).  Korean: Hangul stems
    with particles and verb endings, space separated.  English: a Zipf-weighted
    list of common and technical words.
  * tool output ~75-80 % of the bytes (one real archive: ~90 %): source files,
    logs, test runs, listings, grep hits, JSON, fetched web pages/docs in the
    session language; sizes log-normal (median ~1 KB, long tail to 256 KB).
  * reasoning on ~20 % of rows (~40 % of assistant turns), English or the
    session language; some assistant turns carry tool calls with empty
    content and non-empty reasoning.
  * needles: rare strings (CJK characters that jieba's dictionary never uses,
    rare katakana/Hangul, random Latin tokens) planted at known ids; see
    ``Needle``.

Run ``python bench/generate.py --help`` for the command line.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field

GENERATOR_VERSION = 1

# --------------------------------------------------------------------------
# The mix, in one place.
MIX = {
    "session_lang": {"zh": 0.45, "en": 0.25, "ja": 0.15, "ko": 0.15},
    # probability that reasoning (when present) is in English rather than the session language
    "reasoning_english": 0.5,
    # probability that an assistant turn carries reasoning
    "reasoning_rate": 0.40,
    # tool output kinds (by count), see Corpus._tool_round
    "tool_kinds": {
        "read_file": 0.24,
        "terminal_log": 0.14,
        "terminal_test": 0.08,
        "terminal_ls": 0.07,
        "terminal_git": 0.06,
        "search_files": 0.10,
        "web_extract": 0.20,
        "json_api": 0.06,
        "write_file": 0.05,
    },
    # median bytes of one tool output, and the log-normal sigma
    "tool_median_bytes": 1300,
    "tool_sigma": 1.35,
    "tool_max_bytes": 256 * 1024,
}

# --------------------------------------------------------------------------
# Word lists written for this generator (no external list needed for these).

EN_WORDS = """
the of and to a in is it you that he was for on are with as I his they be at one have this from or had by
not word but what some we can out other were all there when up use your how said an each she which do
their time if will way about many then them write would like so these her long make thing see him two has
look more day could go come did number sound no most people my over know water than call first who may
down side been now find any new work part take get place made live where after back little only round man
year came show every good me give our under name very through just form sentence great think say help low
line differ turn cause much mean before move right boy old too same tell does set three want air well also
play small end put home read hand port large spell add even land here must big high such follow act why ask
men change went light kind off need house picture try us again animal point mother world near build self
earth father head stand own page should country found answer school grow study still learn plant cover food
sun four between state keep eye never last let thought city tree cross farm hard start might story saw far
sea draw left late run while press close night real life few north open seem together next white children
begin got walk example ease paper group always music those both mark often letter until mile river car feet
care second book carry took science eat room friend began idea fish mountain stop once base hear horse cut
sure watch color face wood main enough plain girl usual young ready above ever red list though feel talk
bird soon body dog family direct pose leave song measure door product black short numeral class wind
question happen complete ship area half rock order fire south problem piece told knew pass since top whole
king space heard best hour better true during hundred five remember step early hold west ground interest
reach fast verb sing listen six table travel less morning ten simple several vowel toward war lay against
pattern slow center love person money serve appear road map rain rule govern pull cold notice voice unit
power town fine certain fly fall lead cry dark machine note wait plan figure star box noun field rest
correct able pound done beauty drive stood contain front teach week final gave green oh quick develop ocean
warm free minute strong special mind behind clear tail produce fact street inch multiply nothing course stay
wheel full force blue object decide surface deep moon island foot system busy test record boat common gold
possible plane stead dry wonder laugh thousand ago ran check game shape equate hot miss brought heat snow
tire bring yes distant fill east paint language among
""".split()

TECH_WORDS = """
file function error config server client request response database query index table column row value
install build test deploy commit branch merge push pull docker container image kubernetes cluster node pod
service endpoint api token auth user password session cache memory disk cpu thread process timeout retry
log debug warning info exception stack trace module package import export class method variable string
integer array list dict object json yaml toml schema migration version release patch bug fix feature
refactor performance latency throughput benchmark script command shell terminal path directory folder
permission owner group network socket port host proxy gateway certificate tls http https url header body
payload queue worker job task scheduler cron event handler callback promise async await future channel
lock mutex transaction rollback backup restore snapshot replica shard partition compile linker binary
library dependency lockfile virtualenv pip npm cargo rust python javascript typescript golang sqlite
postgres redis nginx linux ubuntu debian macos windows kernel driver buffer stream pipe signal exit code
status output input argument parameter option flag environment secret key hash checksum encoding unicode
tokenizer search index bigram phrase prefix match rank score relevance archive message agent model prompt
context window embedding vector chunk batch pipeline dataset training inference gpu latency quota limit
""".split()

IDENT_PARTS = """
get set load save read write parse format render update delete create insert remove add find search
fetch send handle process build make init start stop run check validate compute resolve open close flush
user session message index token query result config item list map node tree graph path file dir name
id key value count size len offset start end time date stamp hash cache store db conn cursor row col
table schema field record entry event handler callback worker task job queue buffer stream reader writer
client server request response status error retry timeout limit max min total batch chunk page
""".split()

JA_FUNCTION = """
は が を に で と の も へ や から まで より です ます でした ました ません ている ています
しました します する される されます された について によって として ため こと もの よう
ください てください ですか ますか ね よ か だ である ない なかった あります ありません
いる いた れる られる せる させる たい たら ば ても けど けれども ので のに なら
この その あの どの これ それ あれ ここ そこ どこ また さらに まず 次に 最後に
""".split()

JA_KATAKANA = """
ファイル サーバー データベース インストール エラー コマンド テスト ログ ユーザー ディレクトリ
パス モジュール パッケージ ライブラリ プログラム コード スクリプト ブランチ コミット マージ
デプロイ ビルド バージョン アップデート リリース キャッシュ メモリ ディスク ネットワーク ポート
ホスト クライアント リクエスト レスポンス ステータス タイムアウト リトライ トークン セッション
メッセージ インデックス クエリ テーブル カラム スキーマ マイグレーション バックアップ
パフォーマンス ベンチマーク ターミナル シェル プロセス スレッド イベント ハンドラ コールバック
コンテナ イメージ クラスター ノード サービス エンドポイント パラメータ オプション フラグ
ドキュメント ページ リンク ボタン ウィンドウ ブラウザ プラグイン エディタ フォーマット
エンコーディング ユニコード トークナイザー サーチ フレーズ プレフィックス ランキング
""".split()

JA_HALFWIDTH = "ｴﾗｰ ﾌｧｲﾙ ﾃｽﾄ ｻｰﾊﾞｰ ﾛｸﾞ ｺﾏﾝﾄﾞ ﾃﾞｰﾀ ﾕｰｻﾞｰ".split()

KO_STEMS = """
파일 서버 설정 오류 사용자 데이터베이스 확인 실행 설치 테스트 코드 함수 변수 문제 결과 방법
경우 시간 작업 프로젝트 디렉토리 경로 명령 명령어 로그 메시지 요청 응답 상태 버전 업데이트 배포
빌드 브랜치 커밋 병합 캐시 메모리 디스크 네트워크 포트 호스트 클라이언트 세션 토큰 인덱스 검색
쿼리 테이블 컬럼 스키마 백업 성능 속도 처리 프로세스 스레드 이벤트 컨테이너 이미지 서비스
문서 페이지 내용 부분 다음 이전 전체 모든 새로운 기존 현재 필요 가능 다시 먼저 이제 지금
우리 사람 생각 이유 정보 데이터 시스템 모델 에이전트 대화 질문 답변 예시 방식 구조 기능
추가 삭제 수정 변경 생성 저장 읽기 쓰기 연결 시작 종료 완료 실패 성공 해결 분석 정리 요약
한국어 중국어 일본어 영어 문자 단어 문장 토큰화 형태소 바이그램 색인 전문 검색엔진
""".split()

KO_PARTICLES = ["", "은", "는", "이", "가", "을", "를", "에", "에서", "으로", "로", "의", "도", "와", "과", "하고", "만"]
KO_PARTICLE_W = [30, 6, 6, 7, 7, 8, 8, 7, 5, 4, 4, 8, 3, 2, 2, 2, 1]
KO_ENDINGS = """
합니다. 했습니다. 있습니다. 없습니다. 됩니다. 되었습니다. 해주세요. 확인했습니다. 하겠습니다.
할까요? 인가요? 입니다. 이에요. 해요. 했어요. 있어요. 없어요. 같습니다. 보입니다. 필요합니다.
하고 하지만 그리고 그래서 따라서 때문에 위해 통해 대해 관련 있는 없는 하는 된 할 수
""".split()

ZH_PUNCT = [("，", 0.060), ("。", 0.030), ("、", 0.010), ("：", 0.006), ("；", 0.003), ("？", 0.004),
            ("！", 0.002), ("（", 0.002), ("）", 0.002), ("「", 0.001), ("」", 0.001), ("\n\n", 0.006),
            ("\n", 0.004), (" ", 0.01)]

LOG_COMPONENTS = """
api worker scheduler db cache auth gateway indexer search ingest uploader http grpc main sync
""".split()

LOG_MESSAGES = [
    "request completed", "request started", "connection established", "connection reset by peer",
    "retrying after backoff", "cache miss", "cache hit", "task queued", "task finished", "task failed",
    "slow query detected", "transaction committed", "transaction rolled back", "health check ok",
    "rate limit exceeded", "token refreshed", "user logged in", "user logged out", "file uploaded",
    "index rebuilt", "checkpoint complete", "worker started", "worker stopped", "config reloaded",
    "deadline exceeded", "upstream returned error", "disk usage above threshold", "gc pause",
]
LOG_MESSAGES_CJK = {
    "zh": ["请求处理完成", "数据库连接超时", "用户登录失败", "索引重建完成", "缓存已清理", "任务执行成功",
           "配置文件加载失败", "磁盘空间不足", "正在重试", "权限不足，无法写入"],
    "ja": ["リクエスト完了", "データベース接続がタイムアウトしました", "ログインに失敗しました",
           "インデックスを再構築しました", "キャッシュを削除しました", "設定ファイルの読み込みに失敗"],
    "ko": ["요청 처리 완료", "데이터베이스 연결 시간 초과", "로그인 실패", "인덱스 재구성 완료",
           "캐시 삭제됨", "설정 파일 로드 실패"],
}

LANG_EXT = [("py", 0.40), ("ts", 0.18), ("js", 0.08), ("rs", 0.10), ("go", 0.10), ("sh", 0.06), ("md", 0.08)]

TITLE_PREFIX = {"zh": "关于", "ja": "", "ko": "", "en": ""}


# --------------------------------------------------------------------------
# Weighted vocabularies.

class Vocab:
    """Tokens with weights, sampled with random.choices and cumulative weights."""

    __slots__ = ("tokens", "cum", "sep", "avg_bytes")

    def __init__(self, pairs, sep=""):
        pairs = [(t, w) for t, w in pairs if w > 0]
        self.tokens = [t for t, _ in pairs]
        self.cum = list(itertools.accumulate(w for _, w in pairs))
        self.sep = sep
        total = self.cum[-1]
        self.avg_bytes = sum(len(t.encode()) * w for t, w in pairs) / total + len(sep.encode())

    def sample(self, rng: random.Random, k: int) -> list:
        return rng.choices(self.tokens, cum_weights=self.cum, k=k)

    def text(self, rng: random.Random, nbytes: int) -> str:
        k = max(1, int(nbytes / self.avg_bytes))
        return self.sep.join(rng.choices(self.tokens, cum_weights=self.cum, k=k))


def zipf(items, s=1.0, scale=1.0):
    return [(t, scale / (i + 1) ** s) for i, t in enumerate(items)]


def mixed(*parts):
    """Combine (pairs, share) lists so each part gets its share of the total weight."""
    out = []
    for pairs, share in parts:
        tot = sum(w for _, w in pairs)
        out.extend((t, w * share / tot) for t, w in pairs)
    return out


def jieba_dict_path() -> str:
    try:
        import jieba  # noqa: F401  (the package ships dict.txt next to its __init__)
    except ImportError as exc:
        raise SystemExit(
            "bench/generate.py needs jieba's word-frequency list (dict.txt): "
            "pip install 'jieba>=0.42' (or pip install -e '.[bench]')"
        ) from exc
    try:
        from importlib import resources

        path = resources.files("jieba").joinpath("dict.txt")
        path = str(path)
    except Exception:  # pragma: no cover
        path = os.path.join(os.path.dirname(jieba.__file__), "dict.txt")
    if not os.path.exists(path):
        raise SystemExit(f"jieba is installed but its dict.txt is missing ({path})")
    return path


def _is_han(ch: str) -> bool:
    o = ord(ch)
    return 0x4E00 <= o <= 0x9FFF


def load_jieba_words():
    """[(word, count)] of the all-Han words in jieba's dict.txt, in file order."""
    out = []
    with open(jieba_dict_path(), encoding="utf-8") as f:
        for line in f:
            parts = line.split(" ")
            if len(parts) < 2:
                continue
            w = parts[0]
            if w and all(_is_han(c) for c in w):
                out.append((w, int(parts[1])))
    return out


def hangul(l: int, v: int, t: int) -> str:
    return chr(0xAC00 + (l * 21 + v) * 28 + t)


# --------------------------------------------------------------------------
# Needles.

@dataclass
class Needle:
    """A rare string planted in known messages.

    ``kind``: cjk2 / cjk4 / cjk6 (Han characters jieba's dictionary never uses,
    so they occur nowhere else), ja (rare katakana + such Han), ko (Hangul
    syllables the generator never otherwise produces), latin (a random token
    with letters outside hex), mixed (rare Han + Latin token + rare Han).
    ``column``: content or reasoning.  ``ids``: message ids, ascending.
    """

    text: str
    kind: str
    column: str
    want: int  # planned occurrences
    ids: list = field(default_factory=list)

    def as_dict(self):
        return {"text": self.text, "kind": self.kind, "column": self.column, "ids": list(self.ids)}


# needle kinds and how often each is planted: (kind, column, occurrences)
NEEDLE_PLAN = [
    ("cjk2", "content", 1), ("cjk2", "content", 3), ("cjk2", "content", 10),
    ("cjk4", "content", 1), ("cjk4", "content", 1), ("cjk4", "content", 3), ("cjk4", "content", 10),
    ("cjk6", "content", 1), ("cjk6", "content", 5),
    ("ja", "content", 1), ("ja", "content", 4),
    ("ko", "content", 1), ("ko", "content", 4),
    ("latin", "content", 1), ("latin", "content", 3), ("latin", "content", 10),
    ("mixed", "content", 1), ("mixed", "content", 3),
    ("cjk4", "reasoning", 1), ("cjk4", "reasoning", 3), ("latin", "reasoning", 2),
]


# --------------------------------------------------------------------------

@dataclass
class Session:
    id: str
    title: str
    source: str
    started_at: float
    lang: str
    messages: list


class Corpus:
    """A deterministic stream of sessions totalling ``size_bytes`` of text."""

    def __init__(self, size_bytes: int, seed: int = 1, *, langs: dict | None = None,
                 start_time: float = 1_704_067_200.0):
        """``langs``: session language weights, default MIX["session_lang"] (zh, en, ja, ko)."""
        if size_bytes <= 0:
            raise ValueError("size_bytes must be positive")
        self.size_bytes = int(size_bytes)
        self.seed = seed
        self.langs = dict(langs or MIX["session_lang"])
        bad = set(self.langs) - set(MIX["session_lang"])
        if bad or not any(w > 0 for w in self.langs.values()):
            raise ValueError(f"langs must weight some of {sorted(MIX['session_lang'])}, got {self.langs}")
        self.start_time = start_time
        self.rng = random.Random(f"cjk-bench-{seed}")
        self._build_vocab()
        self._plan_needles()
        self.stats = {
            "bytes": 0, "messages": 0, "sessions": 0,
            "by_field": {"content": 0, "reasoning": 0, "tool_calls": 0, "tool_name": 0},
            "by_role": {"user": 0, "assistant": 0, "tool": 0},
            "by_tool_kind": {k: 0 for k in MIX["tool_kinds"]},
            "rows_with_reasoning": 0, "empty_content_with_reasoning": 0,
            "by_lang_sessions": {k: 0 for k in self.langs},
        }
        self._done = False

    # ---- vocabularies ------------------------------------------------------
    def _build_vocab(self):
        rng = random.Random(f"cjk-bench-vocab-{self.seed}")
        words = load_jieba_words()
        self.han_used = set()
        for w, _ in words:
            self.han_used.update(w)

        # identifiers, paths, terms
        parts = IDENT_PARTS
        idents = set()
        while len(idents) < 6000:
            n = rng.choice((1, 2, 2, 2, 3, 3))
            ps = [rng.choice(parts) for _ in range(n)]
            style = rng.random()
            if style < 0.45:
                idents.add("_".join(ps))
            elif style < 0.80:
                idents.add(ps[0] + "".join(p.capitalize() for p in ps[1:]))
            elif style < 0.93:
                idents.add("".join(p.capitalize() for p in ps))
            else:
                idents.add("_".join(ps).upper())
        idents = sorted(idents)
        rng.shuffle(idents)
        self.idents = idents
        dirs = ["src", "lib", "tests", "app", "cmd", "internal", "pkg", "scripts", "docs", "core", "utils",
                "api", "server", "client", "components", "models", "services", "config", "tools", "bench"]
        paths = []
        for i in range(3000):
            depth = rng.choice((1, 2, 2, 3, 4))
            ext = rng.choices([e for e, _ in LANG_EXT], [w for _, w in LANG_EXT])[0]
            stem = rng.choice(idents[:2000])
            if ext in ("ts", "js") and rng.random() < 0.5:
                stem = "".join(p.capitalize() for p in stem.split("_"))
            p = "/".join(rng.choice(dirs) for _ in range(depth)) + f"/{stem.lower() if ext != 'ts' else stem}.{ext}"
            if rng.random() < 0.15:
                p = "/home/agent/projects/" + rng.choice(idents[:300]).lower() + "/" + p
            paths.append(p)
        self.paths = paths
        self.ident_vocab = Vocab(zipf(idents, 1.05))
        self.path_vocab = Vocab(zipf(paths, 0.9))
        terms = TECH_WORDS + ["API", "SQL", "JSON", "HTTP", "CLI", "CI", "PR", "GPU", "FTS5", "SQLite",
                              "Docker", "GitHub", "Python", "Rust", "LLM", "UTF-8", "README.md", "v2",
                              "localhost:8080", "pytest", "git", "npm", "pip"]
        latin_terms = mixed((zipf(terms, 1.0), 0.55), (zipf(idents[:3000], 1.0), 0.30),
                            (zipf(paths[:1000], 1.0), 0.15))

        # English prose
        en_pairs = mixed((zipf(EN_WORDS, 0.95), 0.70), (zipf(TECH_WORDS, 0.9), 0.18),
                         (zipf(idents[:2000], 1.0), 0.04),
                         ([(w + ".", 1) for w in EN_WORDS[:200]] + [(w + ",", 1) for w in EN_WORDS[:200]], 0.06),
                         ([("\n\n", 1)], 0.008), ([("`" + p + "`", 1) for p in paths[:300]], 0.012))
        self.en = Vocab(en_pairs, sep=" ")

        # Chinese prose: jieba words by count, punctuation, Latin terms
        han_share = 1.0 - sum(w for _, w in ZH_PUNCT) - 0.035
        self.zh = Vocab(mixed((words, han_share), (ZH_PUNCT, 1.0 - han_share - 0.035),
                              (latin_terms, 0.035)))
        self.zh_words = words

        # Japanese
        words2 = sorted((p for p in words if len(p[0]) == 2), key=lambda p: -p[1])[:20000]
        kata_syll = [chr(c) for c in range(0x30A2, 0x30F3)] + ["ー"]
        gen_kata = set()
        while len(gen_kata) < 2000:
            gen_kata.add("".join(rng.choice(kata_syll) for _ in range(rng.randint(3, 6))))
        gen_kata = sorted(gen_kata)
        self.ja = Vocab(mixed(([(w, c ** 0.8) for w, c in words2], 0.34),
                              (zipf(JA_FUNCTION, 0.8), 0.44),
                              (zipf(JA_KATAKANA, 0.9), 0.08), (zipf(gen_kata, 1.0), 0.04),
                              (zipf(JA_HALFWIDTH, 1.0), 0.003),
                              ([("、", 5), ("。", 4), ("\n\n", 0.4), ("「", 0.3), ("」", 0.3)], 0.08),
                              (latin_terms, 0.017)))

        # Korean: real stems plus generated ones from a syllable pool, with particles
        syl = set()
        for w in KO_STEMS + KO_ENDINGS + KO_PARTICLES:
            syl.update(c for c in w if 0xAC00 <= ord(c) <= 0xD7A3)
        common_l = [0, 2, 3, 5, 6, 7, 9, 11, 12, 14, 15, 16, 17, 18]
        while len(syl) < 900:
            t = 0 if rng.random() < 0.6 else rng.choice((1, 4, 8, 16, 17, 19, 21, 27))
            syl.add(hangul(rng.choice(common_l), rng.randrange(21), t))
        syl = sorted(syl)
        rng.shuffle(syl)
        self.ko_syllables = set(syl)
        gen_stems = set()
        while len(gen_stems) < 5000:
            gen_stems.add("".join(syl[min(int(rng.paretovariate(0.7)) - 1, len(syl) - 1)]
                                  for _ in range(rng.choice((2, 2, 2, 3)))))
        stems = zipf(KO_STEMS, 0.8, 3.0) + zipf(sorted(gen_stems), 1.0, 1.0)
        ko_pairs = [(s + p, w * pw) for s, w in stems for p, pw in zip(KO_PARTICLES, KO_PARTICLE_W)]
        self.ko = Vocab(mixed((ko_pairs, 0.78), (zipf(KO_ENDINGS, 0.9), 0.17),
                              ([("\n\n", 1)], 0.006), (latin_terms, 0.03)), sep=" ")

        self.prose = {"en": self.en, "zh": self.zh, "ja": self.ja, "ko": self.ko}
        self._build_code_pools(rng)

    def _build_code_pools(self, rng):
        """Pools of code lines per language (agents re-read the same files a lot)."""
        id_ = lambda: self.ident_vocab.sample(rng, 1)[0]  # noqa: E731
        num = lambda: str(rng.choice((0, 1, 2, 3, 8, 10, 16, 32, 64, 100, 256, 1000, 4096, rng.randint(0, 99999))))  # noqa: E731

        def comment(prefix):
            lang = rng.choices(["en", "zh", "ja", "ko"], [0.6, 0.25, 0.08, 0.07])[0]
            return prefix + " " + self.prose[lang].text(rng, rng.randint(20, 90)).replace("\n", " ")

        def string_lit():
            if rng.random() < 0.25:
                lang = rng.choice(["zh", "ja", "ko"])
                return '"' + self.prose[lang].text(rng, rng.randint(10, 40)).replace("\n", " ").replace('"', "") + '"'
            return '"' + " ".join(rng.choices(EN_WORDS[:300], k=rng.randint(1, 5))) + '"'

        py = [
            lambda: f"def {id_()}({id_()}, {id_()}=None):",
            lambda: f"    {id_()} = {id_()}({id_()}, {num()})",
            lambda: f"    return {id_()}.{id_()}({id_()})",
            lambda: f"    if {id_()} is None or len({id_()}) > {num()}:",
            lambda: f"        raise ValueError({string_lit()})",
            lambda: f"from {id_()}.{id_()} import {id_()}, {id_()}",
            lambda: f"import {id_()}",
            lambda: f"class {id_().title().replace('_', '')}({id_().title().replace('_', '')}):",
            lambda: f"    for {id_()} in self.{id_()}:",
            lambda: f"        self.{id_()}[{id_()}] = {string_lit()}",
            lambda: comment("    #"),
            lambda: f'    logger.info({string_lit()}, {id_()})',
            lambda: "",
        ]
        ts = [
            lambda: f"export function {id_()}({id_()}: {id_().title().replace('_', '')}): Promise<void> {{",
            lambda: f"  const {id_()} = await {id_()}.{id_()}({id_()}, {num()});",
            lambda: f"  if (!{id_()}) throw new Error({string_lit()});",
            lambda: f"import {{ {id_()}, {id_()} }} from './{id_()}';",
            lambda: f"  return {{ ...{id_()}, {id_()}: {string_lit()} }};",
            lambda: comment("  //"),
            lambda: "}",
            lambda: "",
        ]
        rs = [
            lambda: f"pub fn {id_()}(&self, {id_()}: &str) -> Result<{id_().title().replace('_', '')}, Error> {{",
            lambda: f"    let {id_()} = self.{id_()}.get({id_()}).ok_or(Error::NotFound)?;",
            lambda: f"    for {id_()} in {id_()}.iter() {{",
            lambda: f"        {id_()}.push({id_()}.clone());",
            lambda: comment("    //"),
            lambda: f"use crate::{id_()}::{{{id_()}, {id_()}}};",
            lambda: "}",
            lambda: "",
        ]
        go = [
            lambda: f"func ({id_()[:1]} *{id_().title().replace('_', '')}) {id_().title().replace('_', '')}(ctx context.Context) error {{",
            lambda: f"\t{id_()}, err := {id_()}.{id_().title().replace('_', '')}(ctx, {num()})",
            lambda: "\tif err != nil {",
            lambda: f"\t\treturn fmt.Errorf({string_lit()[:-1]}: %w\", err)",
            lambda: comment("\t//"),
            lambda: "}",
            lambda: "",
        ]
        sh = [
            lambda: f"cd {self.path_vocab.sample(rng, 1)[0].rsplit('/', 1)[0]}",
            lambda: f"export {id_().upper()}={num()}",
            lambda: f"python -m {id_()} --{id_().replace('_', '-')} {num()}",
            lambda: comment("#"),
            lambda: f'echo {string_lit()}',
            lambda: "fi",
        ]
        md = [
            lambda: "## " + self.prose[rng.choice(["en", "zh", "ja", "ko"])].text(rng, 30).replace("\n", " "),
            lambda: "- " + self.prose[rng.choice(["en", "zh"])].text(rng, 80).replace("\n", " "),
            lambda: self.prose[rng.choice(["en", "zh", "ja", "ko"])].text(rng, 200).replace("\n", " "),
            lambda: f"`{id_()}`: " + self.en.text(rng, 60),
            lambda: "",
        ]
        self.code_pools = {}
        for ext, makers in (("py", py), ("ts", ts), ("js", ts), ("rs", rs), ("go", go), ("sh", sh), ("md", md)):
            lines = [rng.choice(makers)() for _ in range(6000 if ext != "md" else 2500)]
            self.code_pools[ext] = lines
        self.code_ext = [e for e, _ in LANG_EXT]
        self.code_ext_cum = list(itertools.accumulate(w for _, w in LANG_EXT))

    # ---- needles -------------------------------------------------------------
    def _plan_needles(self):
        rng = random.Random(f"cjk-bench-needles-{self.seed}")
        rare_han = [chr(c) for c in range(0x4E00, 0xA000) if chr(c) not in self.han_used]
        rare_kata = ["ヷ", "ヸ", "ヹ", "ヺ", "ヵ", "ヶ", "ヮ", "ヰ", "ヱ"]
        rare_ko = []
        for l in (1, 4, 8, 10, 13):  # ㄲ ㄸ ㅃ ㅆ ㅉ leads with odd finals
            for v in (8, 9, 10, 15, 16):
                for t in (3, 5, 6, 9, 10, 11, 12, 13, 14, 15):
                    s = hangul(l, v, t)
                    if s not in self.ko_syllables:
                        rare_ko.append(s)
        used = set()

        def fresh(make):
            while True:
                s = make()
                if s not in used:
                    used.add(s)
                    return s

        def latin():
            return "".join(rng.choice("ghjkmnpqrstvwxyz") for _ in range(3)) + "".join(
                rng.choice("ghjkmnpqrstvwxyz0123456789") for _ in range(7))

        makers = {
            "cjk2": lambda: "".join(rng.sample(rare_han, 2)),
            "cjk4": lambda: "".join(rng.sample(rare_han, 4)),
            "cjk6": lambda: "".join(rng.sample(rare_han, 6)),
            "ja": lambda: rng.choice(rare_kata) + rng.choice(rare_kata) + "".join(rng.sample(rare_han, 2)) + "の" + rng.choice(rare_han),
            "ko": lambda: "".join(rng.sample(rare_ko, 3)),
            "latin": latin,
            "mixed": lambda: "".join(rng.sample(rare_han, 2)) + latin() + "".join(rng.sample(rare_han, 2)),
        }
        self.needles = [Needle(fresh(makers[kind]), kind, col, n) for kind, col, n in NEEDLE_PLAN]
        # byte offsets at which each occurrence is due (uniform over the corpus)
        plan = []
        for i, nd in enumerate(self.needles):
            for _ in range(nd.want):
                plan.append((rng.randrange(self.size_bytes * 19 // 20), i))
        plan.sort()
        self._needle_plan = plan
        self._needle_next = 0
        self._pending = []  # needle indexes due but not yet placed

    def _place_needles(self, msg, nbytes_before):
        """Plant due needles into ``msg`` (mutates it); returns bytes added."""
        plan = self._needle_plan
        while self._needle_next < len(plan) and plan[self._needle_next][0] < nbytes_before:
            self._pending.append(plan[self._needle_next][1])
            self._needle_next += 1
        if not self._pending:
            return 0
        added = 0
        keep = []
        for i in self._pending:
            nd = self.needles[i]
            text = msg.get(nd.column)
            if not text or (nd.ids and nd.ids[-1] == msg["id"]):
                keep.append(i)
                continue
            pos = self.rng.randrange(len(text) + 1)
            sp = text.find(" ", pos)
            if nd.kind in ("latin", "mixed"):
                ins = " " + nd.text + " "
            else:
                ins = nd.text
            if sp < 0:
                text = text + " " + ins
                ins = " " + ins
            else:
                text = text[:sp] + ins + text[sp:]
            msg[nd.column] = text
            nd.ids.append(msg["id"])
            added += len(ins.encode())
        self._pending = keep
        return added

    # ---- text pieces -----------------------------------------------------------
    def _size(self, median, sigma, lo=1, hi=None):
        n = int(self.rng.lognormvariate(math.log(median), sigma))
        if hi is not None and n > hi:
            n = hi
        return max(lo, n)

    def _prose(self, lang, nbytes):
        return self.prose[lang].text(self.rng, nbytes)

    def _code(self, ext, nbytes, numbered=False):
        pool = self.code_pools[ext]
        avg = 36 if ext != "md" else 70
        k = max(1, nbytes // avg)
        start = self.rng.randrange(len(pool))
        # a contiguous window of the pool looks like one file; long reads wrap around
        if start + k <= len(pool):
            lines = pool[start:start + k]
        else:
            lines = self.rng.choices(pool, k=k)
        if numbered:
            first = self.rng.randint(1, 400)
            return "\n".join(f"{first + i:6d}|{ln}" for i, ln in enumerate(lines))
        return "\n".join(lines)

    def _log(self, lang, nbytes):
        rng = self.rng
        lines = []
        t = int(self._now) - rng.randint(0, 86400)
        tm = time.gmtime(t)
        day = time.strftime("%Y-%m-%dT%H:", tm)
        minute, sec, ms = tm.tm_min, tm.tm_sec, 0
        total = 0
        levels = ("INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR")
        cjk_msgs = LOG_MESSAGES_CJK.get(lang)
        while total < nbytes:
            ms += rng.randint(1, 900)
            if ms >= 1000:
                sec += ms // 1000
                ms %= 1000
                if sec >= 60:
                    minute = (minute + sec // 60) % 60
                    sec %= 60
            lvl = rng.choice(levels)
            r = rng.random()
            if cjk_msgs and r < 0.25:
                msg = rng.choice(cjk_msgs)
            else:
                msg = rng.choice(LOG_MESSAGES)
            if r < 0.5:
                extra = f" request_id={rng.getrandbits(64):016x} duration_ms={rng.randint(0, 5000)}"
            elif r < 0.7:
                extra = f" path={self.path_vocab.sample(rng, 1)[0]} status={rng.choice((200, 200, 201, 204, 400, 404, 500))}"
            elif r < 0.8:
                extra = f" user_id={rng.randint(1, 99999)} {self.ident_vocab.sample(rng, 1)[0]}={rng.randint(0, 1 << 20)}"
            else:
                extra = ""
            line = f"{day}{minute:02d}:{sec:02d}.{ms:03d}Z {lvl:5s} [{rng.choice(LOG_COMPONENTS)}] {msg}{extra}"
            if lvl == "ERROR" and rng.random() < 0.3:
                line += "\nTraceback (most recent call last):\n" + "\n".join(
                    f'  File "{p}", line {rng.randint(1, 900)}, in {f}'
                    for p, f in zip(self.path_vocab.sample(rng, 4), self.ident_vocab.sample(rng, 4))
                ) + f"\n{rng.choice(('KeyError', 'ValueError', 'TimeoutError', 'sqlite3.OperationalError'))}: {self.en.text(rng, 40)}"
            lines.append(line)
            total += len(line) + 1
        return "\n".join(lines)

    def _tool_output(self, kind, lang, nbytes):
        rng = self.rng
        if kind == "read_file":
            path = self.path_vocab.sample(rng, 1)[0]
            ext = path.rsplit(".", 1)[-1]
            return path, self._code(ext, nbytes, numbered=True)
        if kind == "write_file":
            return self.path_vocab.sample(rng, 1)[0], json.dumps(
                {"success": True, "bytes_written": nbytes, "lines": nbytes // 36})
        if kind == "terminal_log":
            cmd = rng.choice(("tail -n 200 logs/app.log", "journalctl -u api --since today", "docker logs api",
                              "kubectl logs deploy/worker", "cat /var/log/ingest.log"))
            return cmd, self._log(lang, nbytes)
        if kind == "terminal_test":
            files = self.path_vocab.sample(rng, 8)
            lines = []
            total = 0
            while total < nbytes:
                f = rng.choice(files)
                r = rng.random()
                if r < 0.85:
                    line = f"{f}::test_{self.ident_vocab.sample(rng, 1)[0].lower()} {'PASSED' if r < 0.8 else 'SKIPPED'} [{rng.randint(0, 100):3d}%]"
                else:
                    line = (f"{f}::test_{self.ident_vocab.sample(rng, 1)[0].lower()} FAILED\n"
                            + self._code("py", 300) + f"\nE   AssertionError: assert {rng.randint(0, 999)} == {rng.randint(0, 999)}")
                lines.append(line)
                total += len(line) + 1
            lines.append(f"==== {rng.randint(1, 900)} passed, {rng.randint(0, 5)} failed, {rng.randint(0, 9)} skipped in {rng.uniform(0.5, 300):.2f}s ====")
            return "pytest -q", "\n".join(lines)
        if kind == "terminal_ls":
            lines = []
            total = 0
            while total < nbytes:
                p = self.path_vocab.sample(rng, 1)[0]
                line = (f"-rw-r--r--  1 agent staff {rng.randint(0, 10**6):8d} "
                        f"{rng.choice(('Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun'))} {rng.randint(1, 28):2d} "
                        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {p}")
                lines.append(line)
                total += len(line) + 1
            return "ls -la", "\n".join(lines)
        if kind == "terminal_git":
            r = rng.random()
            if r < 0.5:
                lines = []
                total = 0
                while total < nbytes:
                    line = (f"{rng.getrandbits(160):040x}\nAuthor: {rng.choice(('agent', 'alice', 'bob', '张伟', '佐藤'))}\n"
                            f"    {self._prose(rng.choice(('en', lang)), rng.randint(30, 120))}")
                    lines.append(line)
                    total += len(line) + 1
                return "git log", "\n".join(lines)
            body = self._code(rng.choice(("py", "ts", "rs")), nbytes)
            diff = "\n".join(("+" if rng.random() < 0.5 else "-") + ln for ln in body.split("\n"))
            return "git diff", f"diff --git a/{self.path_vocab.sample(rng, 1)[0]} b/...\n@@ -1,20 +1,24 @@\n" + diff
        if kind == "search_files":
            lines = []
            total = 0
            pool = self.code_pools[rng.choice(("py", "ts", "rs", "go", "md"))]
            while total < nbytes:
                line = f"{self.path_vocab.sample(rng, 1)[0]}:{rng.randint(1, 2000)}:{rng.choice(pool)}"
                lines.append(line)
                total += len(line) + 1
            return self.ident_vocab.sample(rng, 1)[0], "\n".join(lines)
        if kind == "web_extract":
            plang = lang if rng.random() < 0.7 else "en"
            parts = []
            total = 0
            while total < nbytes:
                r = rng.random()
                if r < 0.12:
                    p = "## " + self._prose(plang, rng.randint(15, 40)).replace("\n", " ")
                elif r < 0.20:
                    p = self._code(rng.choice(("py", "sh", "ts")), rng.randint(100, 500))
                    p = "```\n" + p + "\n```"
                elif r < 0.35:
                    p = "\n".join("- " + self._prose(plang, rng.randint(20, 120)).replace("\n", " ") for _ in range(rng.randint(2, 6)))
                else:
                    p = self._prose(plang, rng.randint(150, 900))
                parts.append(p)
                total += len(p.encode()) + 2
            url = f"https://docs.example.org/{self.ident_vocab.sample(rng, 1)[0]}/{rng.randint(1, 9999)}"
            return url, f"# {url}\n\n" + "\n\n".join(parts)
        if kind == "json_api":
            items = []
            total = 0
            while total < nbytes:
                item = {k: (rng.randint(0, 10**6) if rng.random() < 0.4 else self._prose(rng.choice(("en", lang)), rng.randint(5, 60)))
                        for k in self.ident_vocab.sample(rng, rng.randint(3, 8))}
                s = json.dumps(item, ensure_ascii=False)
                items.append(item)
                total += len(s.encode()) + 2
            return "GET /api/v1/" + self.ident_vocab.sample(rng, 1)[0], json.dumps({"data": items}, ensure_ascii=False, indent=1)
        raise AssertionError(kind)

    # ---- sessions --------------------------------------------------------------
    def _msg(self, session, role, content, reasoning=None, tool_calls=None, tool_name=None, tool_call_id=None):
        self._now += self.rng.uniform(0.5, 90.0)
        self._next_id += 1
        return {
            "id": self._next_id, "session_id": session.id, "role": role, "content": content,
            "reasoning": reasoning, "tool_calls": tool_calls, "tool_name": tool_name,
            "tool_call_id": tool_call_id, "timestamp": round(self._now, 3),
        }

    def _reasoning(self, lang):
        rng = self.rng
        if rng.random() >= MIX["reasoning_rate"]:
            return None
        rl = "en" if rng.random() < MIX["reasoning_english"] else lang
        return self._prose(rl, self._size(380, 0.9, 40, 12000))

    def _tool_round(self, session, lang, out):
        """An assistant turn with tool calls, then one tool message per call."""
        rng = self.rng
        ncalls = 1 if rng.random() < 0.85 else rng.randint(2, 3)
        kinds = rng.choices(list(MIX["tool_kinds"]), list(MIX["tool_kinds"].values()), k=ncalls)
        calls, results = [], []
        for kind in kinds:
            size = self._size(MIX["tool_median_bytes"], MIX["tool_sigma"], 20, MIX["tool_max_bytes"])
            arg, output = self._tool_output(kind, lang, size)
            call_id = f"call_{rng.getrandbits(96):024x}"
            if kind == "read_file":
                name, args = "read_file", {"path": arg}
            elif kind == "write_file":
                ext = arg.rsplit(".", 1)[-1]
                name, args = "write_file", {"path": arg, "content": self._code(ext, size // 2)}
            elif kind.startswith("terminal"):
                name, args = "terminal", {"command": arg}
            elif kind == "search_files":
                name, args = "search_files", {"pattern": arg, "path": "."}
            elif kind == "web_extract":
                name, args = "web_extract", {"urls": [arg]}
            else:
                name, args = "terminal", {"command": f"curl -s localhost:8080{arg.split(' ', 1)[1]}"}
            calls.append({"id": call_id, "type": "function",
                          "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}})
            results.append((name, call_id, output, kind))
        content = "" if rng.random() < 0.6 else self._prose(lang, self._size(80, 0.6, 10, 600))
        out.append(self._msg(session, "assistant", content, self._reasoning(lang), calls))
        for name, call_id, output, kind in results:
            m = self._msg(session, "tool", output, None, None, name, call_id)
            m["_kind"] = kind
            out.append(m)

    def _session(self):
        rng = self.rng
        langs = self.langs
        lang = rng.choices(list(langs), list(langs.values()))[0]
        self._now += rng.uniform(60, 6 * 3600)
        t = time.gmtime(self._now)
        sid = time.strftime("%Y%m%d_%H%M%S_", t) + f"{rng.getrandbits(24):06x}"
        title = TITLE_PREFIX[lang] + self._prose(lang, 24).replace("\n", " ").strip()
        session = Session(sid, title, rng.choice(("cli", "cli", "telegram", "discord", "api")),
                          round(self._now, 3), lang, [])
        out = session.messages
        nturns = min(40, int(rng.expovariate(1 / 4.5)) + 1)
        for _ in range(nturns):
            user = self._prose(lang, self._size(110, 1.0, 4, 6000))
            r = rng.random()
            if r < 0.15:
                user += "\n\n```\n" + self._log(lang, self._size(400, 0.8, 50, 4000)) + "\n```"
            elif r < 0.25:
                user += " " + self.path_vocab.sample(rng, 1)[0]
            out.append(self._msg(session, "user", user))
            nrounds = min(8, int(rng.expovariate(1 / 1.8)))
            for _ in range(nrounds):
                self._tool_round(session, lang, out)
            answer = self._prose(lang, self._size(260, 0.9, 20, 8000))
            if rng.random() < 0.25:
                ext = rng.choice(("py", "ts", "rs", "go", "sh"))
                answer += f"\n\n```{ext}\n" + self._code(ext, self._size(300, 0.8, 60, 6000)) + "\n```\n\n" + self._prose(lang, self._size(120, 0.6, 10, 800))
            out.append(self._msg(session, "assistant", answer, self._reasoning(lang)))
        return session

    def _account(self, session):
        """Plant needles, count bytes; returns False once the size is reached."""
        st = self.stats
        bf, br, bk = st["by_field"], st["by_role"], st["by_tool_kind"]
        keep = []
        for m in session.messages:
            if st["bytes"] >= self.size_bytes:
                break
            kind = m.pop("_kind", None)
            n0 = st["bytes"]
            self._place_needles(m, n0)
            c = m["content"] or ""
            nc = len(c) if c.isascii() else len(c.encode())
            r = m["reasoning"]
            nr = 0
            if r:
                nr = len(r) if r.isascii() else len(r.encode())
                st["rows_with_reasoning"] += 1
                if not c:
                    st["empty_content_with_reasoning"] += 1
            nt = len(tool_calls_json(m).encode()) if m["tool_calls"] else 0
            nn = len(m["tool_name"]) if m["tool_name"] else 0
            total = nc + nr + nt + nn
            bf["content"] += nc
            bf["reasoning"] += nr
            bf["tool_calls"] += nt
            bf["tool_name"] += nn
            br[m["role"]] += total
            if kind:
                bk[kind] += total
            st["bytes"] += total
            st["messages"] += 1
            keep.append(m)
        session.messages[:] = keep
        return st["bytes"] < self.size_bytes

    def sessions(self):
        """Yield Session objects until ``size_bytes`` of text has been produced."""
        if self._done:
            raise RuntimeError("a Corpus streams once; make a new Corpus(size, seed) to replay it")
        self._now = self.start_time
        self._next_id = 0
        more = True
        while more:
            s = self._session()
            more = self._account(s)
            # ids must stay dense over the yielded messages
            self._next_id = s.messages[-1]["id"] if s.messages else self._next_id
            if s.messages:
                self.stats["sessions"] += 1
                self.stats["by_lang_sessions"][s.lang] += 1
                yield s
        self._done = True

    def messages(self, *, with_ids: bool = True):
        """All messages in order.  ``with_ids=False`` drops the "id" key, for feeding
        ``Archive.bulk_import`` (which assigns the same ids to an empty archive and
        would otherwise keep "id" in each message's metadata)."""
        for s in self.sessions():
            if with_ids:
                yield from s.messages
            else:
                for m in s.messages:
                    m = dict(m)
                    del m["id"]
                    yield m

    def needle_manifest(self):
        """Needles with the ids they landed in (complete once the stream is exhausted)."""
        return [n.as_dict() for n in self.needles if n.ids]

    def summary(self):
        st = self.stats
        b = max(1, st["bytes"])
        pct = lambda d: {k: round(100 * v / b, 1) for k, v in d.items()}  # noqa: E731
        return {
            "generator_version": GENERATOR_VERSION, "seed": self.seed, "langs": self.langs,
            "size_bytes": st["bytes"],
            "messages": st["messages"], "sessions": st["sessions"],
            "avg_message_bytes": round(b / max(1, st["messages"])),
            "pct_bytes_by_field": pct(st["by_field"]), "pct_bytes_by_role": pct(st["by_role"]),
            "pct_bytes_by_tool_kind": pct(st["by_tool_kind"]),
            "pct_rows_with_reasoning": round(100 * st["rows_with_reasoning"] / max(1, st["messages"]), 1),
            "empty_content_with_reasoning": st["empty_content_with_reasoning"],
            "sessions_by_lang": st["by_lang_sessions"],
        }


def tool_calls_json(msg) -> str:
    """The tool_calls column as stored: JSON text (non-ASCII kept), or '' if none."""
    tc = msg.get("tool_calls")
    return json.dumps(tc, ensure_ascii=False) if tc else ""


def write_jsonl(corpus: Corpus, path: str, *, with_ids: bool = False) -> dict:
    """Write the corpus, one message per line; returns corpus.summary().

    Line N holds message id N (the needle manifest's ids), so the "id" key is
    left out unless ``with_ids`` (an importer would keep it as metadata)."""
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    with open(path, "w", encoding="utf-8") as f:
        for s in corpus.sessions():
            if with_ids:
                f.write("\n".join(dumps(m) for m in s.messages))
            else:
                f.write("\n".join(dumps({k: v for k, v in m.items() if k != "id"}) for m in s.messages))
            f.write("\n")
    return corpus.summary()


def parse_size(text: str) -> int:
    t = text.strip().upper().replace("IB", "B")
    mult = 1
    for suffix, m in (("KB", 10**3), ("MB", 10**6), ("GB", 10**9), ("K", 10**3), ("M", 10**6), ("G", 10**9), ("B", 1)):
        if t.endswith(suffix):
            t, mult = t[: -len(suffix)], m
            break
    return int(float(t) * mult)


def parse_langs(text: str | None) -> dict | None:
    """'zh=0.45,en=0.25,ja=0.15,ko=0.15' -> dict (None for the default mix)."""
    if not text:
        return None
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        out[k.strip()] = float(v) if v else 1.0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Generate a deterministic agent-like session archive (JSONL).")
    ap.add_argument("--size", default="100MB", help="bytes of text to produce, e.g. 500MB, 1GB (default 100MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--langs", help="session language weights, e.g. zh=0.45,en=0.25,ja=0.15,ko=0.15 (the default)")
    ap.add_argument("-o", "--out", required=True, help="JSONL output path")
    ap.add_argument("--needles", help="write the needle manifest (JSON) here (default OUT.needles.json)")
    ap.add_argument("--ids", action="store_true", help='include each message\'s "id" (= its line number)')
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    corpus = Corpus(parse_size(args.size), args.seed, langs=parse_langs(args.langs))
    t1 = time.perf_counter()
    summary = write_jsonl(corpus, args.out, with_ids=args.ids)
    t2 = time.perf_counter()
    with open(args.needles or args.out + ".needles.json", "w", encoding="utf-8") as f:
        json.dump(corpus.needle_manifest(), f, ensure_ascii=False, indent=1)
    summary["vocab_seconds"] = round(t1 - t0, 2)
    summary["generate_seconds"] = round(t2 - t1, 2)
    summary["MB_per_s"] = round(summary["size_bytes"] / 1e6 / max(1e-9, t2 - t1), 1)
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
