/*
** cjk_extension.c — the SQLite entry point: registers the cjk_unicode61
** tokenizer and the cjk_match and cjk_rank auxiliary functions with one
** connection's FTS5,
** and the cjk_version table (cjk_version.c) with the connection.
**
** No scalar SQL functions: reaching their user data needs the host's
** sqlite3_user_data(), which only a process-global API pointer could supply,
** and that is what two SQLite libraries in one process trample.  FTS5
** tokenizers and auxiliary functions get their context without it.
**
** The entry point is named after the library file the way SQLite derives it
** (lowercase letters of the name after "lib", up to the first dot), so
** ".load libcjk_unicode61" and load_extension("..._cjk_unicode61.cpython-...so")
** both find sqlite3_cjkunicode_init without being told.
**
** Every failure sets *pzErrMsg (allocated with the host's sqlite3_mprintf):
** a loader that fails silently shows "error during initialization:" and
** nothing else.
*/
#include <stdlib.h>
#include <string.h>

#include "cjk_api.h"
#include "cjk_aux.h"
#include "cjk_host.h"
#include "cjk_rank.h"
#include "cjk_tokenizer.h"
#include "cjk_version.h"

static void *apiSlot(const sqlite3_api_routines *pApi, int iSlot) {
  void *p;
  memcpy(&p, (const char *)pApi + (size_t)iSlot * sizeof(void *), sizeof(void *));
  return p;
}

/* The host's sqlite3_libversion_number(), read before anything else: it is in
** every routines table, so the slots newer hosts added can be checked for. */
static int hostVersion(const sqlite3_api_routines *pApi) {
  int (*xVersion)(void);
  void *p = apiSlot(pApi, CJK_SLOT_libversion_number);
  if (!p) return 0;
  memcpy(&xVersion, &p, sizeof(p));
  return xVersion();
}

#define COPY_SLOT(name)                                                                          \
  do {                                                                                           \
    void *p_ = apiSlot(pApi, CJK_SLOT_##name);                                                   \
    memcpy(&pHost->name, &p_, sizeof(p_));                                                       \
  } while (0)

/* Copy the routines we use out of the host's table.  The caller has checked
** that the host is new enough to have every slot (CJK_MIN_SQLITE). */
static void hostInit(CjkHost *pHost, const sqlite3_api_routines *pApi) {
  memset(pHost, 0, sizeof(*pHost));
  COPY_SLOT(malloc64);
  COPY_SLOT(realloc64);
  COPY_SLOT(free);
  COPY_SLOT(mprintf);
  COPY_SLOT(prepare_v2);
  COPY_SLOT(bind_pointer);
  COPY_SLOT(step);
  COPY_SLOT(finalize);
  COPY_SLOT(result_double);
  COPY_SLOT(result_error);
  COPY_SLOT(result_error_nomem);
  COPY_SLOT(result_text);
  COPY_SLOT(value_bytes);
  COPY_SLOT(value_double);
  COPY_SLOT(value_text);
  COPY_SLOT(value_type);
  COPY_SLOT(create_module_v2);
  COPY_SLOT(declare_vtab);
}

/* The entry point on a host older than CJK_MIN_SQLITE: say so, reading no
** slot but sqlite3_mprintf, which every host has (the slots CjkHost copies
** may lie past the end of this host's table). */
static int refuseOldHost(const sqlite3_api_routines *pApi, int iVersion, char **pzErrMsg) {
  char *(*xMprintf)(const char *, ...);
  void *p = apiSlot(pApi, CJK_SLOT_mprintf);
  memcpy(&xMprintf, &p, sizeof(p));
  if (pzErrMsg && xMprintf) {
    *pzErrMsg = xMprintf("cjk_unicode61 needs SQLite 3.20.0 or later; this host is %d.%d.%d",
                         iVersion / 1000000, (iVersion / 1000) % 1000, iVersion % 1000);
  }
  return SQLITE_ERROR;
}

/* Return the connection's fts5_api, or NULL if FTS5 is not compiled in. */
static fts5_api *findFts5(const CjkHost *h, sqlite3 *db) {
  fts5_api *pRet = 0;
  sqlite3_stmt *pStmt = 0;
  if (h->prepare_v2(db, "SELECT fts5(?1)", -1, &pStmt, 0) == SQLITE_OK) {
    h->bind_pointer(pStmt, 1, (void *)&pRet, "fts5_api_ptr", 0);
    h->step(pStmt);
  }
  h->finalize(pStmt);
  return pRet;
}

CJK_API int sqlite3_cjkunicode_init(sqlite3 *db, char **pzErrMsg,
                                       const sqlite3_api_routines *pApi) {
  CjkHost host;
  fts5_api *pFts5;
  int rc, iVersion;
  if (pzErrMsg) *pzErrMsg = 0;
  if (!pApi || !db) return SQLITE_ERROR; /* no host: nothing to report through */
  iVersion = hostVersion(pApi);
  if (iVersion < CJK_MIN_SQLITE) return refuseOldHost(pApi, iVersion, pzErrMsg);
  hostInit(&host, pApi);
  pFts5 = findFts5(&host, db);
  if (!pFts5) {
    if (pzErrMsg) {
      *pzErrMsg = host.mprintf("cjk_unicode61 needs FTS5, and this SQLite (%d.%d.%d) was built "
                               "without it (SQLITE_ENABLE_FTS5)",
                               iVersion / 1000000, (iVersion / 1000) % 1000, iVersion % 1000);
    }
    return SQLITE_ERROR;
  }
  if (pFts5->iVersion < 2) {
    if (pzErrMsg) {
      *pzErrMsg = host.mprintf("cjk_unicode61 needs fts5_api version 2 or later; this host has %d",
                               pFts5->iVersion);
    }
    return SQLITE_ERROR;
  }
  rc = cjk_tokenizer_register(pFts5, &host);
  if (rc != SQLITE_OK) {
    if (pzErrMsg) *pzErrMsg = host.mprintf("cjk_unicode61: registering the tokenizer failed (%d)", rc);
    return rc;
  }
  rc = cjk_aux_register(pFts5, &host);
  if (rc != SQLITE_OK) {
    if (pzErrMsg) *pzErrMsg = host.mprintf("cjk_unicode61: registering cjk_match failed (%d)", rc);
    return rc;
  }
  rc = cjk_rank_register(pFts5, &host);
  if (rc != SQLITE_OK) {
    if (pzErrMsg) *pzErrMsg = host.mprintf("cjk_unicode61: registering cjk_rank failed (%d)", rc);
    return rc;
  }
  return cjk_version_register(db, &host, pzErrMsg);
}
