/*
** cjk_aux.h — cjk_match(), the reasoning-aware FTS5 auxiliary function.
*/
#ifndef CJK_AUX_H
#define CJK_AUX_H

#include "cjk_host.h"

/* Register the auxiliary function(s) with pFts5.  Host routines are copied
** into the registration, so two SQLite libraries in one process never share. */
int cjk_aux_register(fts5_api *pFts5, const CjkHost *pHost);

#endif /* CJK_AUX_H */
