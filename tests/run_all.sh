#!/usr/bin/env bash
# The README's test command: sets up a fresh machine and runs every test stage.
#   1. the pytest suite on this Python, APSW as the host (SQLite 3.5x, fts5 API v3)
#   2. the stdlib-sqlite3 host: Debian's python3 (SQLite 3.40, fts5 API v2) in a
#      venv, loading into stdlib sqlite3 and APSW in one process
#   3. the whole suite again against an ASan/UBSan build of the extension
#   4. the libFuzzer harness for a bounded time
# (The benchmark smoke runs are part of the suite: tests/test_bench_smoke.py.)
# Stages can be picked: tests/run_all.sh [main] [debian] [asan] [fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
STAGES=${*:-main debian asan fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
export CJK_REQUIRE_ALL_HOSTS=${CJK_REQUIRE_ALL_HOSTS:-1}

have_stage() { [[ " $STAGES " == *" $1 "* ]]; }

apt_install() {  # apt_install PKG... (only what is missing)
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then echo "run_all: need root to apt-get install ${missing[*]}" >&2; exit 1; fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

echo "== setup: system packages"
apt_install sqlite3 libsqlite3-dev python3-venv clang
# libFuzzer comes with the runtime of the clang that "clang" is (14 on Debian 12, 19 on 13).
apt_install "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"

echo "== setup: $PY -m pip install -e .[test,bench]"
# The ASan stage runs python/setup_build.py directly, outside pip's isolated
# build environment, so this Python needs the build requirements too.
"$PY" -m pip install -q --disable-pip-version-check "setuptools>=77,<85" "cffi>=1.15" wheel
"$PY" -m pip install -q --disable-pip-version-check -e ".[test,bench]"
# The Hermes importer is tested on state.db files written by Hermes' own SessionDB;
# hermes_state.py imports without the agent's dependencies.
"$PY" -m pip install -q --disable-pip-version-check --no-deps "hermes-agent>=0.19"

if have_stage main; then
  echo "== stage main: pytest on $("$PY" -c 'import sys; print(sys.version.split()[0])'), APSW host"
  "$PY" -m pytest -q
fi

if have_stage debian; then
  echo "== stage debian: stdlib sqlite3 host ($(/usr/bin/python3 -c 'import sqlite3; print(sqlite3.sqlite_version)'))"
  VENV=${CJK_DEBIAN_VENV:-/tmp/cjk-debian-venv}
  [[ -x $VENV/bin/python ]] || /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check cffi apsw pytest hypothesis
  # The in-tree package (built in setup above; the cffi module is abi3) is imported from $ROOT.
  CJK_REQUIRE_STDLIB_LOAD=1 "$VENV/bin/python" -m pytest -q tests/test_hosts.py tests/test_loading.py tests/test_aux.py
fi

if have_stage asan; then
  echo "== stage asan: the suite against an ASan/UBSan build"
  ASAN_TREE=$(mktemp -d /tmp/cjk-asan.XXXXXX)
  git ls-files -z | xargs -0 -I{} cp --parents {} "$ASAN_TREE"/
  (cd "$ASAN_TREE" && CJK_SANITIZE=1 "$PY" python/setup_build.py -q build_ext --inplace >/dev/null)
  LIBASAN=$(gcc -print-file-name=libasan.so)
  LIBUBSAN=$(gcc -print-file-name=libubsan.so)
  (cd "$ASAN_TREE" && \
   LD_PRELOAD="$LIBASAN $LIBUBSAN" \
   ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
   UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   CJK_SANITIZED=1 PYTHONPATH="$ASAN_TREE" "$PY" -m pytest -q -p no:cacheprovider)
  rm -rf "$ASAN_TREE"
fi

if have_stage fuzz; then
  echo "== stage fuzz: libFuzzer harness for ${FUZZ_SECONDS}s"
  FUZZ_BIN=$(mktemp /tmp/cjk-fuzz.XXXXXX)
  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Icsrc \
    csrc/fuzz/fuzz_tokenizer.c csrc/cjk_chars.c csrc/cjk_tokenizer.c csrc/cjk_aux.c csrc/cjk_extension.c \
    -lsqlite3 -o "$FUZZ_BIN"
  CORPUS=$(mktemp -d /tmp/cjk-fuzz-corpus.XXXXXX)
  cp csrc/fuzz/seeds/* "$CORPUS"/
  "$FUZZ_BIN" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$CORPUS" 2>&1 | tail -n 12
  rm -rf "$CORPUS" "$FUZZ_BIN"
fi

echo "== all stages passed: $STAGES"
