/*
** cjk_rank.c — cjk_rank(), bm25's order at a one-phrase query's true cost
** (the contract is in cjk_rank.h).
**
** One RankQuery per statement (FTS5 aux data), built on the first row: the
** phrase count, the table's average row size and each phrase's IDF (1.0 and
** no count when there is one phrase), and per-row scratch for the phrases'
** weighted instance counts.  Each row then costs its instances and its size,
** as bm25's does.
*/
#include <stdio.h>
#include <string.h>

#include "cjk_aux.h"
#include "cjk_rank.h"

#define RANK_K1 1.2
#define RANK_B 0.75

typedef struct RankQuery { /* one statement's values; freed with xFree */
  void (*xFree)(void *);
  int nPhrase;
  double avgdl;   /* > 0 */
  double idfSum;  /* > 0: every aIdf[i] is */
  double *aIdf;   /* nPhrase IDFs, 1.0 each for a one-phrase query */
  double *aFreq;  /* nPhrase weighted instance counts of the current row */
} RankQuery;

static void rankQueryFree(void *p) {
  RankQuery *q = (RankQuery *)p;
  if (q) q->xFree(q);
}

/* The natural logarithm of x, for 0 < x < 2^64 (an IDF's quotient), to within
** a few units in the last place.  Not libm's log(): current glibc versions
** that symbol GLIBC_2.29, which would raise the oldest Linux the wheel runs
** on.  x = m * 2^k with m within [1/sqrt(2), sqrt(2)], and
** ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...) with s = (m-1)/(m+1),
** |s| < 0.172, so twenty terms leave nothing a double holds. */
static double rankLn(double x) {
  double s, s2, term, sum;
  int k = 0, i;
  while (x > 1.4142135623730951 && k < 1100) {
    x *= 0.5;
    k++;
  }
  while (x < 0.7071067811865476 && k > -1100) {
    x *= 2.0;
    k--;
  }
  s = (x - 1.0) / (x + 1.0);
  s2 = s * s;
  term = s;
  sum = s;
  for (i = 3; i < 43; i += 2) {
    term *= s2;
    sum += term / i;
  }
  return 2.0 * sum + k * 0.69314718055994530942;
}

static int countRow(const Fts5ExtensionApi *pApi, Fts5Context *pFts, void *pUser) {
  (void)pApi;
  (void)pFts;
  (*(sqlite3_int64 *)pUser)++;
  return SQLITE_OK;
}

/* Build the statement's RankQuery into *ppQ (owned by FTS5 once set). */
static int rankQueryNew(const Fts5ExtensionApi *pApi, Fts5Context *pFts, const CjkHost *h, RankQuery **ppQ) {
  sqlite3_int64 nRow = 0, nToken = 0;
  RankQuery *q;
  int nPhrase = pApi->xPhraseCount(pFts), i, rc;
  if (nPhrase < 0) nPhrase = 0;
  q = h->malloc64(sizeof(*q) + (sqlite3_uint64)nPhrase * 2 * sizeof(double));
  if (!q) return SQLITE_NOMEM;
  memset(q, 0, sizeof(*q));
  q->xFree = h->free;
  q->nPhrase = nPhrase;
  q->aIdf = (double *)&q[1];
  q->aFreq = q->aIdf + nPhrase;
  rc = pApi->xRowCount(pFts, &nRow);
  if (rc == SQLITE_OK) rc = pApi->xColumnTotalSize(pFts, -1, &nToken);
  q->avgdl = (nRow > 0 && nToken > 0) ? (double)nToken / (double)nRow : 1.0;
  for (i = 0; rc == SQLITE_OK && i < nPhrase; i++) {
    sqlite3_int64 nHit = 0;
    double idf = 1.0;
    if (nPhrase > 1) { /* one phrase: its IDF divides out, so it is never counted */
      rc = pApi->xQueryPhrase(pFts, i, (void *)&nHit, countRow);
      idf = rankLn(((double)nRow - (double)nHit + 0.5) / ((double)nHit + 0.5));
      if (!(idf > 0.0)) idf = 1e-6; /* as bm25: a phrase in half the rows or more weighs a little */
    }
    q->aIdf[i] = idf;
    q->idfSum += idf;
  }
  if (rc != SQLITE_OK) {
    h->free(q);
    return rc;
  }
  rc = pApi->xSetAuxdata(pFts, q, rankQueryFree); /* on failure it has freed q */
  if (rc == SQLITE_OK) *ppQ = q;
  return rc;
}

static void cjkRankFunc(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx, int nVal,
                        sqlite3_value **apVal) {
  const CjkHost *h = (const CjkHost *)pApi->xUserData(pFts); /* cjk_aux_create's copy */
  RankQuery *q = (RankQuery *)pApi->xGetAuxdata(pFts, 0);
  double score = 0.0, lenNorm;
  int rc = SQLITE_OK, nInst = 0, nTok = 0, i;
  if (!q) rc = rankQueryNew(pApi, pFts, h, &q);
  if (rc == SQLITE_OK) {
    memset(q->aFreq, 0, (size_t)q->nPhrase * sizeof(double));
    rc = pApi->xInstCount(pFts, &nInst);
  }
  for (i = 0; rc == SQLITE_OK && i < nInst; i++) {
    int iPhrase = 0, iCol = 0, iOff = 0;
    rc = pApi->xInst(pFts, i, &iPhrase, &iCol, &iOff);
    if (rc == SQLITE_OK && iPhrase >= 0 && iPhrase < q->nPhrase && iCol >= 0) {
      q->aFreq[iPhrase] += iCol < nVal ? h->value_double(apVal[iCol]) : 1.0;
    }
  }
  if (rc == SQLITE_OK) rc = pApi->xColumnSize(pFts, -1, &nTok);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM) {
      h->result_error_nomem(pCtx);
    } else {
      char zErr[80];
      snprintf(zErr, sizeof(zErr), "cjk_rank: reading the row's matches failed (error %d)", rc);
      h->result_error(pCtx, zErr, -1);
    }
    return;
  }
  lenNorm = RANK_K1 * (1.0 - RANK_B + RANK_B * (double)nTok / q->avgdl);
  /* grouped as bm25 groups it, so that where the IDFs are the same (one phrase;
  ** phrases in half the rows or more) rows bm25 scores alike score alike here */
  for (i = 0; i < q->nPhrase; i++) {
    double f = q->aFreq[i];
    score += q->aIdf[i] * ((f * (RANK_K1 + 1.0)) / (f + lenNorm));
  }
  if (q->nPhrase > 0) score /= q->idfSum;
  h->result_double(pCtx, -score);
}

int cjk_rank_register(fts5_api *pFts5, const CjkHost *pHost) {
  return cjk_aux_create(pFts5, pHost, CJK_RANK_NAME, cjkRankFunc);
}
