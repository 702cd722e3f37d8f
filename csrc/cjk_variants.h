/*
** cjk_variants.h — Han variant folding for the fold_variants option.
**
** The table lives in cjk_variants.c, generated from OpenCC's character table
** by python/gen_variants.py (source, version, licence and rule in its header).
*/
#ifndef CJK_VARIANTS_H
#define CJK_VARIANTS_H

#include "cjk_api.h"

/* The canonical (Simplified) form of cp: 發 髮 -> 发, 項 -> 项; every code point
** the table does not list maps to itself.  Idempotent. */
unsigned cjk_fold_variant(unsigned cp);

/* The table itself, for Python (spellings of a folded character) and tests:
** pair i is cjk_variant_pair(i, 0) -> cjk_variant_pair(i, 1), sorted by source. */
CJK_API int cjk_variant_count(void);
CJK_API unsigned cjk_variant_pair(int i, int bTo);

#endif /* CJK_VARIANTS_H */
