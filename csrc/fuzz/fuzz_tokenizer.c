/*
** fuzz_tokenizer.c — libFuzzer harness for cjk_unicode61 (and cjk_match).
**
** Build (see tests/run_all.sh):
**   clang -g -O1 -fsanitize=fuzzer,address,undefined -Icsrc csrc/fuzz/fuzz_tokenizer.c \
**         csrc/cjk_*.c -lsqlite3 -o csrc/fuzz/fuzz_tokenizer
**
** The harness links the system libsqlite3 only to host the extension; the
** extension itself still reaches SQLite through the routines table it is
** handed (registered here as an auto-extension, which passes that table).
**
** Input layout: byte 0 picks the tokenize mode, whether xToken stops early and
** (bit 0x80) fold_variants 1, byte 1 picks an argument set, bytes 2..3 give a stop-after count, then an
** optional argument string (up to the first 0xFF byte) used as tokenchars or
** separators, then the text.  Every emitted token is checked:
**   0 <= iStart <= iEnd <= nText, token length in 1..8 bytes for CJK output,
**   no token after xToken returned non-OK, the stop code returned as is.
** The text is also inserted into an FTS5 table (one with fold_variants 1 when
** bit 0x80 is set) and queried with cjk_match().
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cjk_chars.h"
#include "../cjk_host.h"

int sqlite3_cjkunicode_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* The few libsqlite3 calls the harness makes as a host (declared here, since
** cjk_host.h stands in for sqlite3.h in this project). */
#define SQLITE_STATIC ((void (*)(void *))0)
int sqlite3_auto_extension(void (*xEntryPoint)(void));
int sqlite3_open(const char *zFilename, sqlite3 **ppDb);
int sqlite3_prepare_v2(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
int sqlite3_bind_pointer(sqlite3_stmt *, int, void *, const char *, void (*)(void *));
int sqlite3_bind_text(sqlite3_stmt *, int, const char *, int, void (*)(void *));
int sqlite3_step(sqlite3_stmt *);
int sqlite3_finalize(sqlite3_stmt *);
int sqlite3_exec(sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **);

typedef struct Check {
  int nText;
  int nTok;
  int nStopAfter; /* return SQLITE_DONE after this many tokens (0: never) */
  int bStopped;
} Check;

static int checkToken(void *pCtx, int tflags, const char *pTok, int nTok, int iStart, int iEnd) {
  Check *c = (Check *)pCtx;
  (void)tflags;
  if (c->bStopped) abort(); /* token after we asked to stop */
  if (iStart < 0 || iStart > iEnd || iEnd > c->nText) abort();
  if (nTok < 0 || (nTok > 0 && !pTok)) abort();
  if (nTok > 0) { volatile char x = pTok[nTok - 1]; (void)x; } /* ASan: token readable */
  c->nTok++;
  if (c->nStopAfter && c->nTok >= c->nStopAfter) {
    c->bStopped = 1;
    return SQLITE_DONE;
  }
  return SQLITE_OK;
}

static sqlite3 *db;
static fts5_api *pFts5;

static int setup(void) {
  sqlite3_stmt *pStmt = 0;
  sqlite3_auto_extension((void (*)(void))sqlite3_cjkunicode_init);
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &pStmt, 0) != SQLITE_OK) return 1;
  sqlite3_bind_pointer(pStmt, 1, (void *)&pFts5, "fts5_api_ptr", 0);
  sqlite3_step(pStmt);
  sqlite3_finalize(pStmt);
  if (!pFts5) return 1;
  return sqlite3_exec(db,
                      "CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61');"
                      "CREATE VIRTUAL TABLE tv USING fts5(a, b, tokenize='cjk_unicode61 fold_variants 1');",
                      0, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int aMode[] = {FTS5_TOKENIZE_DOCUMENT, FTS5_TOKENIZE_QUERY,
                              FTS5_TOKENIZE_QUERY | FTS5_TOKENIZE_PREFIX, FTS5_TOKENIZE_AUX};
  fts5_tokenizer tok;
  void *pUd = 0;
  Fts5Tokenizer *pTok = 0;
  const char *azArg[8];
  char zArgVal[64];
  int nArg = 0, rc;
  Check c;
  size_t i, nArgVal = 0, iText;
  if (!db && setup()) abort();
  if (size < 4) return 0;
  memset(&c, 0, sizeof(c));
  for (i = 4; i < size && data[i] != 0xFF && nArgVal < sizeof(zArgVal) - 1; i++) {
    zArgVal[nArgVal++] = data[i] ? (char)data[i] : ' ';
  }
  zArgVal[nArgVal] = 0;
  iText = i < size && data[i] == 0xFF ? i + 1 : 4;
  switch (data[1] % 6) {
    case 0: break;
    case 1: azArg[nArg++] = "remove_diacritics"; azArg[nArg++] = "2"; break;
    case 2: azArg[nArg++] = "tokenchars"; azArg[nArg++] = zArgVal; break;
    case 3: azArg[nArg++] = "separators"; azArg[nArg++] = zArgVal; break;
    case 4: azArg[nArg++] = "categories"; azArg[nArg++] = "L* N* Co Mn"; break;
    default: azArg[nArg++] = "remove_diacritics"; azArg[nArg++] = "0";
             azArg[nArg++] = "separators"; azArg[nArg++] = zArgVal; break;
  }
  if (data[0] & 0x80) {
    azArg[nArg++] = "fold_variants";
    azArg[nArg++] = "1";
  }
  if (pFts5->xFindTokenizer(pFts5, "cjk_unicode61", &pUd, &tok) != SQLITE_OK) abort();
  if (tok.xCreate(pUd, azArg, nArg, &pTok) != SQLITE_OK) return 0; /* e.g. bad UTF-8 arg */
  c.nText = (int)(size - iText);
  c.nStopAfter = (data[0] & 0x10) ? (data[2] | (data[3] << 8)) % 64 + 1 : 0;
  rc = tok.xTokenize(pTok, &c, aMode[data[0] & 3], (const char *)data + iText, c.nText, checkToken);
  if (c.bStopped && rc != SQLITE_DONE) abort(); /* the stop code must propagate */
  if (!c.bStopped && rc != SQLITE_OK) abort();
  tok.xDelete(pTok);

  { /* folding: output never longer than its documented bound */
    int bVar = (data[0] & 0x80) != 0, nMax = bVar ? CJK_FOLD_MAX(c.nText) : c.nText;
    char *zOut = malloc((size_t)nMax + 1);
    if (!zOut) abort();
    if (cjk_fold_utf8((const char *)data + iText, c.nText, zOut, nMax, bVar) > nMax) abort();
    free(zOut);
  }

  if (data[0] & 0x20) { /* through FTS5: insert, query with cjk_match, delete */
    sqlite3_stmt *pIns = 0, *pQ = 0;
    size_t half = (size - iText) / 2;
    int bVar = (data[0] & 0x80) != 0;
    sqlite3_prepare_v2(db, bVar ? "INSERT INTO tv(rowid, a, b) VALUES (1, ?1, ?2)"
                                : "INSERT INTO t(rowid, a, b) VALUES (1, ?1, ?2)", -1, &pIns, 0);
    sqlite3_bind_text(pIns, 1, (const char *)data + iText, (int)half, SQLITE_STATIC);
    sqlite3_bind_text(pIns, 2, (const char *)data + iText + half, (int)(size - iText - half),
                      SQLITE_STATIC);
    sqlite3_step(pIns);
    sqlite3_finalize(pIns);
    /* The query: up to 12 bytes of the text as an FTS5 phrase ("..." with
    ** quotes doubled), a prefix phrase when data[0] & 0x40. */
    char zQuery[2 * 12 + 4];
    int nQ = 0;
    size_t k, nPiece = half < 12 ? half : 12;
    zQuery[nQ++] = '"';
    for (k = 0; k < nPiece; k++) {
      char ch = (char)data[iText + k];
      if (ch == 0) ch = ' ';
      if (ch == '"') zQuery[nQ++] = '"';
      zQuery[nQ++] = ch;
    }
    zQuery[nQ++] = '"';
    if (data[0] & 0x40) zQuery[nQ++] = '*';
    if (sqlite3_prepare_v2(db,
                           bVar ? "SELECT cjk_match(tv, 'a,b', 40), highlight(tv, 0, '[', ']') "
                                  "FROM tv WHERE tv MATCH ?1"
                                : "SELECT cjk_match(t, 'a,b', 40), highlight(t, 0, '[', ']') "
                                  "FROM t WHERE t MATCH ?1",
                           -1, &pQ, 0) == SQLITE_OK) {
      sqlite3_bind_text(pQ, 1, zQuery, nQ, SQLITE_STATIC);
      while (sqlite3_step(pQ) == SQLITE_ROW) {
      }
    }
    sqlite3_finalize(pQ);
    sqlite3_exec(db, bVar ? "DELETE FROM tv" : "DELETE FROM t", 0, 0, 0);
  }
  return 0;
}
