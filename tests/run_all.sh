#!/usr/bin/env bash
# The README's test command: sets up a fresh machine and runs every test stage.
#   1. the pytest suite on this Python, APSW as the host (SQLite 3.5x, fts5 API v3)
#   2. the stdlib-sqlite3 host: Debian's python3 (SQLite 3.40, fts5 API v2) in a
#      venv, loading into stdlib sqlite3 and APSW in one process
#   3. the Datasette and sqlite-utils plugins as users get them: the built wheel
#      installed in a venv of Debian's python3 (entry points need an install),
#      tests run from outside the checkout so the installed package is used
#   4. the whole suite again against an ASan/UBSan build of the extension
#   5. the libFuzzer harness for a bounded time, on both FTS5 host paths (and csrc/cjk_host.h
#      checked against the current amalgamation's headers the harness links)
#   6. release: sdist -> wheel from the sdist -> auditwheel show -> that wheel installed
#      into fresh venvs of $PYTHON and Debian's python3 -> the whole suite against the
#      installed package, from a copy of tests/ outside the checkout -> .load in sqlite3
# (The benchmark smoke runs are part of the suite: tests/test_bench_smoke.py.)
# Stages can be picked: tests/run_all.sh [main] [debian] [plugins] [asan] [fuzz] [release]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
STAGES=${*:-main debian plugins asan fuzz release}
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
"$PY" -m pip install -q --disable-pip-version-check "setuptools>=77" "cffi>=1.15"
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
  CJK_REQUIRE_STDLIB_LOAD=1 "$VENV/bin/python" -m pytest -q tests/test_hosts.py tests/test_loading.py tests/test_aux.py \
    tests/test_rank.py
fi

if have_stage plugins; then
  echo "== stage plugins: Datasette and sqlite-utils on Debian's python3, the wheel installed"
  PVENV=${CJK_PLUGINS_VENV:-/tmp/cjk-plugins-venv}
  [[ -x $PVENV/bin/python ]] || /usr/bin/python3 -m venv "$PVENV"
  WHEELS=$(mktemp -d /tmp/cjk-wheel.XXXXXX)
  "$PVENV/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" "$ROOT"
  WHEEL=$(ls "$WHEELS"/cjk_tokenizer-*.whl)
  "$PVENV/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL[test]"
  "$PVENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
  (cd "$WHEELS" && CJK_REQUIRE_STDLIB_LOAD=1 CJK_EXPECT_INSTALLED=1 "$PVENV/bin/python" -m pytest -q -p no:cacheprovider \
     --rootdir "$ROOT" "$ROOT/tests/test_plugin_datasette.py" "$ROOT/tests/test_plugin_sqlite_utils.py")
  rm -rf "$WHEELS"
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
  # Both FTS5 host paths, each for half the time: the system SQLite (fts5_api
  # version 2) and a current amalgamation (version 3: xCreateTokenizer_v2,
  # fts5_tokenizer_v2, locales), which the npm package better-sqlite3 ships.
  echo "== stage fuzz: libFuzzer harness, ${FUZZ_SECONDS}s split over the fts5 v2 and v3 hosts"
  command -v npm >/dev/null || apt_install npm
  FUZZ_DIR=$(mktemp -d /tmp/cjk-fuzz.XXXXXX)
  (cd "$FUZZ_DIR" && npm pack --silent better-sqlite3@12 >/dev/null && \
   tar -xzf better-sqlite3-*.tgz package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h \
     package/deps/sqlite3/sqlite3ext.h)
  echo "   amalgamation: SQLite $(sed -n 's/^#define SQLITE_VERSION  *"\([0-9.]*\)".*/\1/p' \
    "$FUZZ_DIR/package/deps/sqlite3/sqlite3.c" | head -n 1)"
  # The system headers predate the fts5 v3 structs: check csrc/cjk_host.h against these in full.
  CJK_SQLITE_INCLUDE="$FUZZ_DIR/package/deps/sqlite3" "$PY" -m pytest -q -p no:cacheprovider tests/test_abi.py
  # SQLite itself gets ASan but no coverage feedback: the fuzzer steers by our code.
  clang -O1 -fsanitize=address -DSQLITE_ENABLE_FTS5 -DSQLITE_THREADSAFE=0 \
    -c "$FUZZ_DIR/package/deps/sqlite3/sqlite3.c" -o "$FUZZ_DIR/sqlite3.o"
  FUZZ_SRC=(csrc/fuzz/fuzz_tokenizer.c csrc/cjk_chars.c csrc/cjk_variants.c csrc/cjk_tokenizer.c csrc/cjk_aux.c
            csrc/cjk_rank.c csrc/cjk_snippet.c
            csrc/cjk_extension.c csrc/cjk_version.c)
  FUZZ_CFLAGS=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Icsrc
               '-DCJK_VERSION="fuzz"')
  clang "${FUZZ_CFLAGS[@]}" "${FUZZ_SRC[@]}" -lsqlite3 -o "$FUZZ_DIR/fuzz_v2"
  clang "${FUZZ_CFLAGS[@]}" "${FUZZ_SRC[@]}" "$FUZZ_DIR/sqlite3.o" -lm -o "$FUZZ_DIR/fuzz_v3"
  for host in v2 v3; do
    # start from the committed corpus (minimized with -merge=1), so a short run starts deep
    mkdir "$FUZZ_DIR/corpus_$host"
    cp csrc/fuzz/seeds/* csrc/fuzz/corpus/* "$FUZZ_DIR/corpus_$host"/
    echo "   fts5 $host host:"
    if ! "$FUZZ_DIR/fuzz_$host" -max_total_time=$((FUZZ_SECONDS / 2)) -max_len=2048 -timeout=10 \
         -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$ROOT/fuzz-$host-" \
         "$FUZZ_DIR/corpus_$host" >"$FUZZ_DIR/log_$host" 2>&1; then
      tail -n 80 "$FUZZ_DIR/log_$host"
      echo "run_all: the fuzzer failed on the $host host; the input is saved as $ROOT/fuzz-$host-*" >&2
      exit 1
    fi
    tail -n 6 "$FUZZ_DIR/log_$host"
  done
  rm -rf "$FUZZ_DIR"
fi

if have_stage release; then
  echo "== stage release: sdist -> wheel from the sdist -> auditwheel -> installed wheel tested in fresh venvs"
  REL=$(mktemp -d /tmp/cjk-release.XXXXXX)
  # python -m build makes the sdist, then the wheel from that sdist alone (isolated: newest setuptools).
  "$PY" -m build --outdir "$REL/dist" . >"$REL/build.log" 2>&1 || { tail -n 40 "$REL/build.log"; exit 1; }
  WHEEL=$(ls "$REL"/dist/*.whl)
  "$PY" -m auditwheel show "$WHEEL" | tee "$REL/show.txt"
  tr -s ' \n' ' ' <"$REL/show.txt" | grep -q "is consistent with the following platform tag: \"manylinux_"
  if grep -q libsqlite3 "$REL/show.txt"; then echo "run_all: the wheel links libsqlite3" >&2; exit 1; fi
  # The suite runs from a copy holding no package: tests/ plus the repo files some tests read.
  mkdir "$REL/tree"
  git ls-files -z tests bench csrc python pyproject.toml README.md | xargs -0 cp --parents -t "$REL/tree"
  for HOST_PY in "$PY" /usr/bin/python3; do
    VENV=$(mktemp -d "$REL/venv.XXXXXX")
    "$HOST_PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL[test,bench]"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps "hermes-agent>=0.19"
    FROM=$(cd "$REL/tree" && env -u PYTHONPATH "$VENV/bin/python" -c 'import cjk_tokenizer; print(cjk_tokenizer.__file__)')
    [[ $FROM == "$VENV"/* ]] || { echo "run_all: the tests would import $FROM, not the installed wheel" >&2; exit 1; }
    REQUIRE_STDLIB=$("$VENV/bin/python" -c 'import sqlite3; print("1" if hasattr(sqlite3.Connection, "enable_load_extension") else "")')
    echo "   $("$VENV/bin/python" -c 'import sys; print(sys.version.split()[0])'): pytest on the installed wheel ($FROM)"
    (cd "$REL/tree" && env -u PYTHONPATH CJK_REQUIRE_STDLIB_LOAD=$REQUIRE_STDLIB \
      "$VENV/bin/python" -m pytest -q -ra -p no:cacheprovider tests)
    LIB=$(cd "$REL/tree" && "$VENV/bin/cjk-tokenizer" path)
    ANSWER=$(sqlite3 :memory: ".load $LIB" "SELECT version FROM cjk_version")
    VERSION=$(cd "$REL/tree" && "$VENV/bin/cjk-tokenizer" --version)
    [[ "cjk-tokenizer $ANSWER" == "$VERSION" ]] || { echo "run_all: sqlite3 .load $LIB says $ANSWER; $VERSION" >&2; exit 1; }
    echo "   sqlite3 shell: .load $LIB -> version $ANSWER, as \`cjk-tokenizer --version\` says"
  done
  rm -rf "$REL"
fi

echo "== all stages passed: $STAGES"
