/*
** fuzz_tokenizer.c — libFuzzer harness for cjk_unicode61, cjk_match, cjk_rank and
** their argument parsing, on either FTS5 host path.
**
** Build (see the fuzz stage of tests/run_all.sh), once per host:
**   v2 path (fts5_api version 2, the system SQLite 3.40):
**     clang -g -O1 -fsanitize=fuzzer,address,undefined -Icsrc csrc/fuzz/fuzz_tokenizer.c \
**           csrc/cjk_*.c -lsqlite3 -o fuzz_v2
**   v3 path (fts5_api version 3: xCreateTokenizer_v2, fts5_tokenizer_v2, locales),
**   linking a current amalgamation compiled with -DSQLITE_ENABLE_FTS5:
**     clang ... csrc/fuzz/fuzz_tokenizer.c csrc/cjk_*.c sqlite3.o -o fuzz_v3
** The harness picks the path from the fts5_api the host hands out.
**
** The harness links SQLite only to host the extension; the extension itself
** still reaches SQLite through the routines table it is handed (registered
** here as an auto-extension, which passes that table).
**
** Input layout:
**   byte 0: bits 0-1 tokenize mode; 0x10 xToken stops early; 0x20 with byte 1
**           bit 0x40: also insert into an FTS5 table and query it with
**           cjk_match(); 0x40 the query is a prefix phrase; 0x80 with byte 1
**           bit 0x80: the tokenizer outlives the connection that created it
**           (closed, its memory reused, before tokenizing).  (The two slow
**           paths take two bits each, so most runs stay on the fast one.)
**           0x08 adds fold_variants 1 (the FTS5 path then uses table tv).
**   byte 1: bits 0-2 the tokenizer argument set (some fuzzed verbatim, to
**           fuzz argument parsing); bits 3-4 the cjk_match argument shape
**           (the third adds the fields layout; the last: max_matches from
**           byte 2 in the array layout, the layout from the argument
**           string, then too few arguments: the columns run in order, and
**           an error stops the row);
**           0x20 adds unigrams 1 (a colocated unigram per bigram)
**   bytes 2..3: stop-after count; byte 2 also cjk_match's max_chars
**   then an optional argument string (up to the first 0xFF byte), used as
**   option values, option names, cjk_match labels and markers, and the locale
**   then the text.
** Every emitted token is checked: 0 <= iStart <= iEnd <= nText, the token
** readable, no token after xToken returned non-OK, and xTokenize returning
** SQLITE_OK after a SQLITE_DONE stop (as SQLite's own tokenizers do).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cjk_chars.h"
#include "../cjk_host.h"
#include "../cjk_tokenizer.h"

int sqlite3_cjkunicode_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* The few SQLite calls the harness makes as a host (declared here, since
** cjk_host.h stands in for sqlite3.h in this project). */
int sqlite3_auto_extension(void (*xEntryPoint)(void));
int sqlite3_open(const char *zFilename, sqlite3 **ppDb);
int sqlite3_close(sqlite3 *);
int sqlite3_prepare_v2(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
int sqlite3_bind_pointer(sqlite3_stmt *, int, void *, const char *, void (*)(void *));
int sqlite3_bind_text(sqlite3_stmt *, int, const char *, int, void (*)(void *));
int sqlite3_bind_int(sqlite3_stmt *, int, int);
int sqlite3_bind_null(sqlite3_stmt *, int);
int sqlite3_step(sqlite3_stmt *);
int sqlite3_finalize(sqlite3_stmt *);
int sqlite3_exec(sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *, char **);
void *sqlite3_malloc(int);
void sqlite3_free(void *);

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
static int bV3; /* the host's fts5_api is version 3 or later */

static fts5_api *fts5Of(sqlite3 *pDb) {
  fts5_api *pRet = 0;
  sqlite3_stmt *pStmt = 0;
  if (sqlite3_prepare_v2(pDb, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK) {
    sqlite3_bind_pointer(pStmt, 1, (void *)&pRet, "fts5_api_ptr", 0);
    sqlite3_step(pStmt);
  }
  sqlite3_finalize(pStmt);
  return pRet;
}

static int setup(void) {
  sqlite3_auto_extension((void (*)(void))sqlite3_cjkunicode_init);
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  pFts5 = fts5Of(db);
  if (!pFts5) return 1;
  bV3 = pFts5->iVersion >= 3;
  fprintf(stderr, "fuzz_tokenizer: fts5_api version %d\n", pFts5->iVersion);
  return sqlite3_exec(db,
                      bV3 ? "CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61', "
                            "locale=1);"
                            "CREATE VIRTUAL TABLE tv USING fts5(a, b, "
                            "tokenize='cjk_unicode61 fold_variants 1', locale=1);"
                          : "CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61');"
                            "CREATE VIRTUAL TABLE tv USING fts5(a, b, "
                            "tokenize='cjk_unicode61 fold_variants 1');",
                      0, 0, 0);
}

/* One tokenizer instance and the methods to drive it, whichever the path. */
typedef struct Tok {
  fts5_tokenizer t1;
  fts5_tokenizer_v2 t2;
  Fts5Tokenizer *p;
} Tok;

/* Create cjk_unicode61 with azArg through pApi.  Returns SQLITE_OK or the
** constructor's error (a bad argument list). */
static int tokCreate(fts5_api *pApi, const char **azArg, int nArg, Tok *pTok) {
  void *pUd = 0;
  memset(pTok, 0, sizeof(*pTok));
  if (pApi->iVersion >= 3) {
    fts5_tokenizer_v2 *p2 = 0;
    if (pApi->xFindTokenizer_v2(pApi, CJK_TOKENIZER_NAME, &pUd, &p2) != SQLITE_OK || !p2) abort();
    pTok->t2 = *p2;
    return pTok->t2.xCreate(pUd, azArg, nArg, &pTok->p);
  }
  if (pApi->xFindTokenizer(pApi, CJK_TOKENIZER_NAME, &pUd, &pTok->t1) != SQLITE_OK) abort();
  return pTok->t1.xCreate(pUd, azArg, nArg, &pTok->p);
}

static int tokRun(Tok *pTok, Check *c, int flags, const char *z, int n, const char *zLoc,
                  int nLoc) {
  if (pTok->t2.xTokenize) {
    return pTok->t2.xTokenize(pTok->p, c, flags, z, n, zLoc, nLoc, checkToken);
  }
  return pTok->t1.xTokenize(pTok->p, c, flags, z, n, checkToken);
}

static void tokDelete(Tok *pTok) {
  if (pTok->t2.xDelete) {
    pTok->t2.xDelete(pTok->p);
  } else {
    pTok->t1.xDelete(pTok->p);
  }
}

/* Insert the text into t (tv, which folds variants, when data[0] & 0x08),
** query it with cjk_match() (and cjk_rank()) in the argument shape eShape picks, then empty
** the table. */
static void throughFts5(const uint8_t *data, const char *zText, size_t nText, const char *zArgVal,
                        int nArgVal) {
  static const char *const azSql[2][4] = {
      {"SELECT cjk_match(t, 'a,b', 40), highlight(t, 0, '[', ']') FROM t WHERE t MATCH ?1",
       "SELECT cjk_match(t, ?2, ?3), cjk_rank(t, ?3, ?2), cjk_rank(t) FROM t WHERE t MATCH ?1",
       ("SELECT cjk_match(t, ?2, ?3, ?4, ?5, ?4), cjk_match(t, ?2, ?3, ?4, ?5, ?4, 0, 'fields'), "
        "snippet(t, -1, '[', ']', '~', 8) "
        "FROM t WHERE t MATCH ?1"),
       ("SELECT cjk_match(t, ?2, ?3, ?4, ?4, ?4, ?3, 'array'), cjk_match(t, ?2, ?3, ?4, ?4, ?4, ?4, ?4), "
        "cjk_match(t) FROM t WHERE t MATCH ?1")},
      {"SELECT cjk_match(tv, 'a,b', 40), highlight(tv, 0, '[', ']') FROM tv WHERE tv MATCH ?1",
       "SELECT cjk_match(tv, ?2, ?3), cjk_rank(tv, ?3, ?2), cjk_rank(tv) FROM tv WHERE tv MATCH ?1",
       ("SELECT cjk_match(tv, ?2, ?3, ?4, ?5, ?4), cjk_match(tv, ?2, ?3, ?4, ?5, ?4, 0, 'fields'), "
        "snippet(tv, -1, '[', ']', '~', 8) "
        "FROM tv WHERE tv MATCH ?1"),
       ("SELECT cjk_match(tv, ?2, ?3, ?4, ?4, ?4, ?3, 'array'), cjk_match(tv, ?2, ?3, ?4, ?4, ?4, ?4, ?4), "
        "cjk_match(tv) FROM tv WHERE tv MATCH ?1")}};
  int bVar = (data[0] & 0x08) != 0;
  sqlite3_stmt *pIns = 0, *pQ = 0;
  size_t half = nText / 2, k, nPiece = half < 12 ? half : 12;
  int eShape = (data[1] >> 3) & 3, nLoc = nArgVal < 8 ? nArgVal : 8;
  char zQuery[2 * 12 + 4];
  int nQ = 0;
  sqlite3_prepare_v2(db,
                     bV3 ? (bVar ? "INSERT INTO tv(rowid, a, b) VALUES (1, fts5_locale(?3, ?1), ?2)"
                                 : "INSERT INTO t(rowid, a, b) VALUES (1, fts5_locale(?3, ?1), ?2)")
                         : (bVar ? "INSERT INTO tv(rowid, a, b) VALUES (1, ?1, ?2)"
                                 : "INSERT INTO t(rowid, a, b) VALUES (1, ?1, ?2)"),
                     -1, &pIns, 0);
  sqlite3_bind_text(pIns, 1, zText, (int)half, SQLITE_STATIC);
  sqlite3_bind_text(pIns, 2, zText + half, (int)(nText - half), SQLITE_STATIC);
  if (bV3) {
    if (nLoc > 0) {
      sqlite3_bind_text(pIns, 3, zArgVal, nLoc, SQLITE_STATIC);
    } else {
      sqlite3_bind_null(pIns, 3);
    }
  }
  sqlite3_step(pIns);
  sqlite3_finalize(pIns);
  /* The query: up to 12 bytes of the text as an FTS5 phrase ("..." with
  ** quotes doubled), a prefix phrase when data[0] & 0x40. */
  zQuery[nQ++] = '"';
  for (k = 0; k < nPiece; k++) {
    char ch = zText[k];
    if (ch == 0) ch = ' ';
    if (ch == '"') zQuery[nQ++] = '"';
    zQuery[nQ++] = ch;
  }
  zQuery[nQ++] = '"';
  if (data[0] & 0x40) zQuery[nQ++] = '*';
  if (sqlite3_prepare_v2(db, azSql[bVar][eShape], -1, &pQ, 0) == SQLITE_OK) {
    sqlite3_bind_text(pQ, 1, zQuery, nQ, SQLITE_STATIC);
    if (eShape > 0) {
      /* labels, max_chars (sometimes not a positive number), markers */
      int nHalf = nArgVal / 2;
      sqlite3_bind_text(pQ, 2, zArgVal, nArgVal, SQLITE_STATIC);
      if (data[2] & 0x80) {
        sqlite3_bind_text(pQ, 3, zArgVal, nHalf, SQLITE_STATIC);
      } else {
        sqlite3_bind_int(pQ, 3, (int)data[2] - 8);
      }
      sqlite3_bind_text(pQ, 4, zArgVal + nHalf, nArgVal - nHalf, SQLITE_STATIC);
      if (data[3] & 1) {
        sqlite3_bind_null(pQ, 5);
      } else {
        sqlite3_bind_text(pQ, 5, zArgVal, nHalf, SQLITE_STATIC);
      }
    }
    while (sqlite3_step(pQ) == SQLITE_ROW) {
    }
  }
  sqlite3_finalize(pQ);
  sqlite3_exec(db, bVar ? "DELETE FROM tv" : "DELETE FROM t", 0, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int aMode[] = {FTS5_TOKENIZE_DOCUMENT, FTS5_TOKENIZE_QUERY,
                              FTS5_TOKENIZE_QUERY | FTS5_TOKENIZE_PREFIX, FTS5_TOKENIZE_AUX};
  Tok tok;
  const char *azArg[8];
  char zArgVal[64], zErr[200];
  int nArg = 0, rc, nArgVal = 0, bValid;
  Check c;
  size_t i, iText;
  const char *zText;
  if (!db && setup()) abort();
  if (size < 4) return 0;
  memset(&c, 0, sizeof(c));
  for (i = 4; i < size && data[i] != 0xFF && nArgVal < (int)sizeof(zArgVal) - 1; i++) {
    zArgVal[nArgVal++] = data[i] ? (char)data[i] : ' ';
  }
  zArgVal[nArgVal] = 0;
  iText = i < size && data[i] == 0xFF ? i + 1 : 4;
  zText = (const char *)data + iText;
  switch (data[1] & 7) {
    case 0: break;
    case 1: azArg[nArg++] = "remove_diacritics"; azArg[nArg++] = "2"; break;
    case 2: azArg[nArg++] = "tokenchars"; azArg[nArg++] = zArgVal; break;
    case 3: azArg[nArg++] = "separators"; azArg[nArg++] = zArgVal; break;
    case 4: azArg[nArg++] = "categories"; azArg[nArg++] = zArgVal; break;
    case 5: azArg[nArg++] = "remove_diacritics"; azArg[nArg++] = "0";
            azArg[nArg++] = "separators"; azArg[nArg++] = zArgVal; break;
    case 6: azArg[nArg++] = zArgVal; azArg[nArg++] = zArgVal + nArgVal / 2; break; /* any name */
    default: azArg[nArg++] = zArgVal; break; /* a name without a value */
  }
  if (data[0] & 0x08) {
    azArg[nArg++] = "fold_variants";
    azArg[nArg++] = "1";
  }
  if (data[1] & 0x20) { /* the unigrams option: a colocated unigram per bigram */
    azArg[nArg++] = "unigrams";
    azArg[nArg++] = "1";
  }

  /* argument checking agrees with the constructor, and says why */
  bValid = cjk_check_args(azArg, nArg, zErr, (int)sizeof(zErr)) == 0;
  if (!bValid && zErr[0] == 0) abort();
  if (bValid && zErr[0] != 0) abort();

  c.nText = (int)(size - iText);
  c.nStopAfter = (data[0] & 0x10) ? (data[2] | (data[3] << 8)) % 64 + 1 : 0;
  if ((data[0] & 0x80) && (data[1] & 0x80)) {
    /* Create the tokenizer on a second connection, close that connection
    ** and churn the heap, so anything the tokenizer still pointed into would
    ** be freed (and reused) memory when it runs and is deleted. */
    sqlite3 *db2 = 0;
    fts5_api *pApi2;
    void *apChurn[16];
    int k;
    if (sqlite3_open(":memory:", &db2) != SQLITE_OK) abort();
    pApi2 = fts5Of(db2);
    if (!pApi2) abort();
    rc = tokCreate(pApi2, azArg, nArg, &tok);
    sqlite3_close(db2);
    for (k = 0; k < 16; k++) {
      apChurn[k] = sqlite3_malloc(64 << (k % 6));
      if (apChurn[k]) memset(apChurn[k], 0xA5, (size_t)(64 << (k % 6)));
    }
    for (k = 0; k < 16; k++) sqlite3_free(apChurn[k]);
  } else {
    rc = tokCreate(pFts5, azArg, nArg, &tok);
  }
  if ((rc == SQLITE_OK) != bValid) abort(); /* checker and constructor disagree */
  if (rc != SQLITE_OK) return 0;
  rc = tokRun(&tok, &c, aMode[data[0] & 3], zText, c.nText, zArgVal, nArgVal < 8 ? nArgVal : 8);
  if (rc != SQLITE_OK) abort(); /* a stop asked for with SQLITE_DONE is SQLITE_OK */
  tokDelete(&tok);

  { /* folding: output never longer than its documented bound */
    int bVar = (data[0] & 0x08) != 0, nMax = bVar ? CJK_FOLD_MAX(c.nText) : c.nText;
    char *zOut = malloc((size_t)nMax + 1);
    if (!zOut) abort();
    if (cjk_fold_utf8(zText, c.nText, zOut, nMax, bVar) > nMax) abort();
    free(zOut);
  }

  if ((data[0] & 0x20) && (data[1] & 0x40)) throughFts5(data, zText, size - iText, zArgVal, nArgVal);
  return 0;
}
