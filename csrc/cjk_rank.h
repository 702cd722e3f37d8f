/*
** cjk_rank.h — cjk_rank(), bm25 ordering without bm25's count of every match
** of a one-phrase query.
**
** SQL signature (an FTS5 auxiliary function: the first argument is the table):
**
**   cjk_rank(tbl [, weight0 [, weight1 ...]])
**
** The weights are per column, in the table's column order, as bm25 takes
** them: a missing one is 1.0, extra ones are ignored.
**
** Result: FTS5's bm25 of the row (k1 = 1.2, b = 0.75; the same phrase
** instances, column weights, row size and average row size) divided by the
** sum of the query phrases' IDF weights, negated as bm25 is (lower is better,
** so ORDER BY it ascending).  The divisor is the same for every row of one
** query, so cjk_rank orders the rows of any query as bm25 does: each
** phrase's part is grouped as bm25 groups it, so rows bm25 scores alike (to
** the last bit) score alike here and keep their tie.  The IDFs come from a
** logarithm of our own (cjk_rank.c says why), within a few units in the last
** place of libm's: two rows whose bm25 scores differ in their last bits only
** may be ordered the other way.
**
** Why: bm25 computes each phrase's IDF on its first row by counting every row
** the phrase matches in the whole index (xQueryPhrase), however few rows the
** statement goes on to score.  For a query of one phrase the IDF divides out,
** so cjk_rank never counts: a frequent term ranked among its newest matches
** costs only those matches.  A query of several phrases counts each, as bm25
** does, since their IDFs weigh them against each other.
**
** Range: with non-negative weights, -(k1 + 1) < result <= 0: each phrase's
** term-frequency part is below k1 + 1, and the result is their IDF-weighted
** mean, so scores of different queries are on one scale.  Where bm25 would
** divide by zero (a table whose rows hold no tokens) the average row size is
** taken as 1.
**
** No process-global state: the host routines travel in the registration's
** user data, the per-query values in FTS5's aux data (freed by FTS5 with the
** host's allocator).
*/
#ifndef CJK_RANK_H
#define CJK_RANK_H

#include "cjk_host.h"

#define CJK_RANK_NAME "cjk_rank"

/* Register cjk_rank with pFts5, copying the host routines into its user data. */
int cjk_rank_register(fts5_api *pFts5, const CjkHost *pHost);

#endif /* CJK_RANK_H */
