/*
** cjk_version.h — the version this library was built as, for Python (through
** cffi) and for SQL (the eponymous virtual table cjk_version).
*/
#ifndef CJK_VERSION_H
#define CJK_VERSION_H

#include "cjk_api.h"
#include "cjk_host.h"

/* The version string the build compiled in (pyproject.toml's version). */
CJK_API const char *cjk_version(void);

/* Register the eponymous virtual table cjk_version on db: one row, one column
** "version".  On failure sets *pzErrMsg (if pzErrMsg is not NULL) with the
** host's mprintf and returns the SQLite error code. */
int cjk_version_register(sqlite3 *db, const CjkHost *pHost, char **pzErrMsg);

#endif /* CJK_VERSION_H */
