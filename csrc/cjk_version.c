/*
** cjk_version.c — SELECT version FROM cjk_version: the version this library
** was built as, answered by the loaded library itself.
**
** An eponymous-only virtual table rather than a scalar function: SQLite hands
** the module's client data (the host routines of this registration) straight
** to xConnect, while a scalar function could reach its user data only through
** the host's sqlite3_user_data(), i.e. through a process-global API pointer
** (see cjk_extension.c).  Nothing here is process-global: the module table is
** constant, and every object is allocated with the registering host's
** sqlite3_malloc64.
*/
#include <string.h>

#include "cjk_host.h"
#include "cjk_version.h"

#ifndef CJK_VERSION
#error "define CJK_VERSION as a string literal (the build passes pyproject.toml's version)"
#endif

const char *cjk_version(void) { return CJK_VERSION; }

/* One per connection: the host routines are the module's client data. */
typedef struct VersionTab {
  sqlite3_vtab base;
  const CjkHost *pHost;
} VersionTab;

/* Invariant: iRow is 0 on the one row and 1 at EOF. */
typedef struct VersionCursor {
  sqlite3_vtab_cursor base;
  int iRow;
} VersionCursor;

static int versionConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                          sqlite3_vtab **ppVtab, char **pzErr) {
  const CjkHost *h = (const CjkHost *)pAux;
  VersionTab *p;
  int rc;
  (void)argc;
  (void)argv;
  (void)pzErr;
  *ppVtab = 0;
  rc = h->declare_vtab(db, "CREATE TABLE x(version TEXT)");
  if (rc != SQLITE_OK) return rc;
  p = (VersionTab *)h->malloc64(sizeof(*p));
  if (!p) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  p->pHost = h;
  *ppVtab = &p->base;
  return SQLITE_OK;
}

static int versionDisconnect(sqlite3_vtab *pVtab) {
  VersionTab *p = (VersionTab *)pVtab;
  p->pHost->free(p);
  return SQLITE_OK;
}

static int versionBestIndex(sqlite3_vtab *pVtab, void *pIndexInfo) {
  (void)pVtab;
  (void)pIndexInfo; /* one row: a full scan is the only plan */
  return SQLITE_OK;
}

static int versionOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  const CjkHost *h = ((VersionTab *)pVtab)->pHost;
  VersionCursor *pCur = (VersionCursor *)h->malloc64(sizeof(*pCur));
  if (!pCur) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static int versionClose(sqlite3_vtab_cursor *pCursor) {
  ((VersionTab *)pCursor->pVtab)->pHost->free(pCursor);
  return SQLITE_OK;
}

static int versionFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                         sqlite3_value **argv) {
  (void)idxNum;
  (void)idxStr;
  (void)argc;
  (void)argv;
  ((VersionCursor *)pCursor)->iRow = 0;
  return SQLITE_OK;
}

static int versionNext(sqlite3_vtab_cursor *pCursor) {
  ((VersionCursor *)pCursor)->iRow = 1;
  return SQLITE_OK;
}

static int versionEof(sqlite3_vtab_cursor *pCursor) { return ((VersionCursor *)pCursor)->iRow != 0; }

static int versionColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *ctx, int iCol) {
  (void)iCol; /* the only column */
  ((VersionTab *)pCursor->pVtab)->pHost->result_text(ctx, CJK_VERSION, -1, SQLITE_STATIC);
  return SQLITE_OK;
}

static int versionRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  *pRowid = ((VersionCursor *)pCursor)->iRow + 1;
  return SQLITE_OK;
}

/* xCreate NULL makes the table eponymous-only: it exists in every schema as
** "cjk_version" and CREATE VIRTUAL TABLE ... USING cjk_version is refused. */
static const sqlite3_module versionModule = {
    1,                 /* iVersion */
    0,                 /* xCreate */
    versionConnect,    /* xConnect */
    versionBestIndex,  /* xBestIndex */
    versionDisconnect, /* xDisconnect */
    0,                 /* xDestroy */
    versionOpen,       /* xOpen */
    versionClose,      /* xClose */
    versionFilter,     /* xFilter */
    versionNext,       /* xNext */
    versionEof,        /* xEof */
    versionColumn,     /* xColumn */
    versionRowid,      /* xRowid */
    0, 0, 0, 0, 0, 0, 0 /* xUpdate .. xRename */
};

static void versionAuxDelete(void *pAux) {
  CjkHost *h = (CjkHost *)pAux;
  void (*xFree)(void *) = h->free;
  xFree(h);
}

int cjk_version_register(sqlite3 *db, const CjkHost *pHost, char **pzErrMsg) {
  int rc;
  CjkHost *pAux = (CjkHost *)pHost->malloc64(sizeof(*pAux));
  if (!pAux) {
    if (pzErrMsg) *pzErrMsg = pHost->mprintf("cjk_unicode61: out of memory registering cjk_version");
    return SQLITE_NOMEM;
  }
  memcpy(pAux, pHost, sizeof(*pAux));
  /* SQLite calls versionAuxDelete when the connection closes, and also when
  ** this call fails. */
  rc = pHost->create_module_v2(db, "cjk_version", &versionModule, pAux, versionAuxDelete);
  if (rc != SQLITE_OK && pzErrMsg) {
    *pzErrMsg = pHost->mprintf("cjk_unicode61: registering cjk_version failed (%d)", rc);
  }
  return rc;
}
