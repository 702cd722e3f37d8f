/*
** cjk_host.h — our own declarations of the SQLite and FTS5 ABI we call.
**
** Why not #include <sqlite3ext.h>: the wheel must build on a machine with only
** gcc and the Python headers, and the extension must never link libsqlite3.
** Everything we call on the host goes through the sqlite3_api_routines table
** the host hands to the entry point, and through the fts5_api it returns for
** "SELECT fts5(?1)".  Both are fixed, append-only ABIs: members are never
** reordered, new ones are only added at the end.  So we name the few slots we
** use by their index (CJK_SLOT_*) and the FTS5 and virtual-table structs by
** their documented layout.  tests/test_abi.py compiles a check against the
** real sqlite3.h and sqlite3ext.h: every slot number, every mirrored struct
** member's offset and every constant's value must agree.
**
** Invariant: nothing here is process-global.  A host's routines are copied
** into a CjkHost owned by one registration, so two SQLite libraries in one
** process (stdlib sqlite3 and APSW, say) each keep their own.
*/
#ifndef CJK_HOST_H
#define CJK_HOST_H

#include <stddef.h>

/* ---- SQLite: opaque handles and the constants we use ------------------- */
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
typedef struct sqlite3_api_routines sqlite3_api_routines; /* never dereferenced by type */
typedef struct sqlite3_module sqlite3_module;
typedef long long sqlite3_int64;
typedef unsigned long long sqlite3_uint64;

#define SQLITE_OK 0
#define SQLITE_ERROR 1
#define SQLITE_NOMEM 7
#define SQLITE_TOOBIG 18
#define SQLITE_MISUSE 21
#define SQLITE_CORRUPT_VTAB (11 | (1 << 8)) /* SQLITE_CORRUPT | 1<<8 */
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_INTEGER 1
#define SQLITE_FLOAT 2
#define SQLITE_TEXT 3
#define SQLITE_NULL 5
#define SQLITE_STATIC ((void (*)(void *))0)

/* Index of each sqlite3_api_routines member we use (sqlite3ext.h order). */
#define CJK_SLOT_declare_vtab 50
#define CJK_SLOT_finalize 57
#define CJK_SLOT_free 58
#define CJK_SLOT_libversion_number 67
#define CJK_SLOT_mprintf 69
#define CJK_SLOT_result_double 79
#define CJK_SLOT_result_error 80
#define CJK_SLOT_result_text 85
#define CJK_SLOT_step 94
#define CJK_SLOT_value_bytes 103
#define CJK_SLOT_value_double 105
#define CJK_SLOT_value_text 109
#define CJK_SLOT_value_type 113
#define CJK_SLOT_prepare_v2 116
#define CJK_SLOT_create_module_v2 119
#define CJK_SLOT_result_error_nomem 137
#define CJK_SLOT_malloc64 197 /* SQLite >= 3.8.7 */
#define CJK_SLOT_realloc64 199
#define CJK_SLOT_bind_pointer 219 /* SQLite >= 3.20.0 */

/* The host routines one registration uses, copied out of the host's table. */
typedef struct CjkHost {
  void *(*malloc64)(sqlite3_uint64); /* every allocation of ours goes through */
  void *(*realloc64)(void *, sqlite3_uint64); /* these three, so the host's heap */
  void (*free)(void *);                       /* limit and accounting apply */
  char *(*mprintf)(const char *, ...);
  int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
  int (*bind_pointer)(sqlite3_stmt *, int, void *, const char *, void (*)(void *));
  int (*step)(sqlite3_stmt *);
  int (*finalize)(sqlite3_stmt *);
  void (*result_double)(sqlite3_context *, double);
  void (*result_error)(sqlite3_context *, const char *, int);
  void (*result_error_nomem)(sqlite3_context *);
  void (*result_text)(sqlite3_context *, const char *, int, void (*)(void *));
  int (*value_bytes)(sqlite3_value *);
  double (*value_double)(sqlite3_value *);
  const unsigned char *(*value_text)(sqlite3_value *);
  int (*value_type)(sqlite3_value *);
  int (*create_module_v2)(sqlite3 *, const char *, const sqlite3_module *, void *, void (*)(void *));
  int (*declare_vtab)(sqlite3 *, const char *);
} CjkHost;

/* ---- virtual tables (layout as documented in SQLite's sqlite3.h) --------- */
typedef struct sqlite3_vtab {
  const sqlite3_module *pModule;
  int nRef;
  char *zErrMsg;
} sqlite3_vtab;

typedef struct sqlite3_vtab_cursor {
  sqlite3_vtab *pVtab;
} sqlite3_vtab_cursor;

/* iVersion 1 (cjk_version.c): the members after xRename are never read. */
struct sqlite3_module {
  int iVersion;
  int (*xCreate)(sqlite3 *, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVTab,
                 char **pzErr);
  int (*xConnect)(sqlite3 *, void *pAux, int argc, const char *const *argv, sqlite3_vtab **ppVTab,
                  char **pzErr);
  int (*xBestIndex)(sqlite3_vtab *pVTab, void *pIndexInfo);
  int (*xDisconnect)(sqlite3_vtab *pVTab);
  int (*xDestroy)(sqlite3_vtab *pVTab);
  int (*xOpen)(sqlite3_vtab *pVTab, sqlite3_vtab_cursor **ppCursor);
  int (*xClose)(sqlite3_vtab_cursor *);
  int (*xFilter)(sqlite3_vtab_cursor *, int idxNum, const char *idxStr, int argc, sqlite3_value **argv);
  int (*xNext)(sqlite3_vtab_cursor *);
  int (*xEof)(sqlite3_vtab_cursor *);
  int (*xColumn)(sqlite3_vtab_cursor *, sqlite3_context *, int);
  int (*xRowid)(sqlite3_vtab_cursor *, sqlite3_int64 *pRowid);
  int (*xUpdate)(sqlite3_vtab *, int, sqlite3_value **, sqlite3_int64 *);
  int (*xBegin)(sqlite3_vtab *);
  int (*xSync)(sqlite3_vtab *);
  int (*xCommit)(sqlite3_vtab *);
  int (*xRollback)(sqlite3_vtab *);
  int (*xFindFunction)(sqlite3_vtab *, int nArg, const char *zName,
                       void (**pxFunc)(sqlite3_context *, int, sqlite3_value **), void **ppArg);
  int (*xRename)(sqlite3_vtab *, const char *zNew);
};

/* ---- FTS5 (layout as documented in SQLite's fts5.h) -------------------- */
typedef struct Fts5Tokenizer Fts5Tokenizer;
typedef struct Fts5Context Fts5Context;
typedef struct Fts5ExtensionApi Fts5ExtensionApi;

typedef int (*cjk_xtoken_fn)(void *pCtx, int tflags, const char *pToken, int nToken,
                             int iStart, int iEnd);

#define FTS5_TOKENIZE_QUERY 0x0001
#define FTS5_TOKENIZE_PREFIX 0x0002
#define FTS5_TOKENIZE_DOCUMENT 0x0004
#define FTS5_TOKENIZE_AUX 0x0008
#define FTS5_TOKEN_COLOCATED 0x0001

typedef struct fts5_tokenizer {
  int (*xCreate)(void *, const char **azArg, int nArg, Fts5Tokenizer **ppOut);
  void (*xDelete)(Fts5Tokenizer *);
  int (*xTokenize)(Fts5Tokenizer *, void *pCtx, int flags, const char *pText, int nText,
                   cjk_xtoken_fn xToken);
} fts5_tokenizer;

typedef struct fts5_tokenizer_v2 { /* fts5_api.iVersion >= 3 (SQLite 3.47+) */
  int iVersion;                    /* 2 */
  int (*xCreate)(void *, const char **azArg, int nArg, Fts5Tokenizer **ppOut);
  void (*xDelete)(Fts5Tokenizer *);
  int (*xTokenize)(Fts5Tokenizer *, void *pCtx, int flags, const char *pText, int nText,
                   const char *pLocale, int nLocale, cjk_xtoken_fn xToken);
} fts5_tokenizer_v2;

typedef struct Fts5PhraseIter {
  const unsigned char *a;
  const unsigned char *b;
} Fts5PhraseIter;

typedef void (*fts5_extension_function)(const Fts5ExtensionApi *pApi, Fts5Context *pFts,
                                        sqlite3_context *pCtx, int nVal,
                                        sqlite3_value **apVal);

struct Fts5ExtensionApi {
  int iVersion;
  void *(*xUserData)(Fts5Context *);
  int (*xColumnCount)(Fts5Context *);
  int (*xRowCount)(Fts5Context *, sqlite3_int64 *pnRow);
  int (*xColumnTotalSize)(Fts5Context *, int iCol, sqlite3_int64 *pnToken);
  int (*xTokenize)(Fts5Context *, const char *pText, int nText, void *pCtx,
                   cjk_xtoken_fn xToken);
  int (*xPhraseCount)(Fts5Context *);
  int (*xPhraseSize)(Fts5Context *, int iPhrase);
  int (*xInstCount)(Fts5Context *, int *pnInst);
  int (*xInst)(Fts5Context *, int iIdx, int *piPhrase, int *piCol, int *piOff);
  sqlite3_int64 (*xRowid)(Fts5Context *);
  int (*xColumnText)(Fts5Context *, int iCol, const char **pz, int *pn);
  int (*xColumnSize)(Fts5Context *, int iCol, int *pnToken);
  int (*xQueryPhrase)(Fts5Context *, int iPhrase, void *pUserData,
                      int (*)(const Fts5ExtensionApi *, Fts5Context *, void *));
  int (*xSetAuxdata)(Fts5Context *, void *pAux, void (*xDelete)(void *));
  void *(*xGetAuxdata)(Fts5Context *, int bClear);
  int (*xPhraseFirst)(Fts5Context *, int iPhrase, Fts5PhraseIter *, int *, int *);
  void (*xPhraseNext)(Fts5Context *, Fts5PhraseIter *, int *piCol, int *piOff);
  int (*xPhraseFirstColumn)(Fts5Context *, int iPhrase, Fts5PhraseIter *, int *);
  void (*xPhraseNextColumn)(Fts5Context *, Fts5PhraseIter *, int *piCol);
  /* iVersion >= 3 */
  int (*xQueryToken)(Fts5Context *, int iPhrase, int iToken, const char **ppToken, int *pnToken);
  int (*xInstToken)(Fts5Context *, int iIdx, int iToken, const char **, int *);
  /* iVersion >= 4 */
  int (*xColumnLocale)(Fts5Context *, int iCol, const char **pz, int *pn);
  int (*xTokenize_v2)(Fts5Context *, const char *pText, int nText, const char *pLocale,
                      int nLocale, void *pCtx, cjk_xtoken_fn xToken);
};

typedef struct fts5_api fts5_api;
struct fts5_api {
  int iVersion; /* 2 on SQLite 3.20-3.46, 3 from 3.47 */
  int (*xCreateTokenizer)(fts5_api *pApi, const char *zName, void *pUserData,
                          fts5_tokenizer *pTokenizer, void (*xDestroy)(void *));
  int (*xFindTokenizer)(fts5_api *pApi, const char *zName, void **ppUserData,
                        fts5_tokenizer *pTokenizer);
  int (*xCreateFunction)(fts5_api *pApi, const char *zName, void *pUserData,
                         fts5_extension_function xFunction, void (*xDestroy)(void *));
  /* iVersion >= 3 only: reading these on a v2 host reads past the struct. */
  int (*xCreateTokenizer_v2)(fts5_api *pApi, const char *zName, void *pUserData,
                             fts5_tokenizer_v2 *pTokenizer, void (*xDestroy)(void *));
  int (*xFindTokenizer_v2)(fts5_api *pApi, const char *zName, void **ppUserData,
                           fts5_tokenizer_v2 **ppTokenizer);
};

/* The oldest host the entry point accepts: every CJK_SLOT_* above exists from
** this version on (sqlite3_bind_pointer is the newest). */
#define CJK_MIN_SQLITE 3020000

#endif /* CJK_HOST_H */
