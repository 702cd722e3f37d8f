/*
** cjk_aux.c — cjk_match(), the reasoning-aware FTS5 auxiliary function.
** The contract (arguments, result, rules) is in cjk_aux.h.
**
** One call runs these phases, each a small function over one object, in the
** manner of SQLite's fts5_aux.c (an error code accumulates in *pRc: a phase
** called with *pRc != SQLITE_OK does nothing):
**   instLoad           InstTable: every phrase instance (xInst), which decide
**                      matched_in and the snippet column (instBestColumn)
**   columnLoad         ColText: the snippet column's text and locale
**   needPositions, queryTokensLoad, literalPlan, columnRetokenize
**                      the column re-tokenized (xTokenize, FTS5_TOKENIZE_AUX),
**                      keeping only the tokens at the instances' positions;
**                      or, when cjk_unicode61 allows it and each phrase is a
**                      run of CJK letters, the instances placed where those
**                      runs stand in the text (cjk_collect_literal)
**   hitsFromInstances  each instance becomes a byte range (instanceBytes)
**   hitsToChars        one scan of the column turns bytes into characters
**   snippetChoose      the window, by the one snippet rule (cjk_snippet.c),
**                      which decodes only the characters around it: memory
**                      stays proportional to max_chars and the hit count
**   jsonSnippet, jsonTail   the JSON, in one buffer handed to SQLite
**
** Invariants: every allocation goes through the host's sqlite3_malloc64,
** sqlite3_realloc64 and sqlite3_free (the registration's copy of them) and is
** checked (an out-of-memory anywhere ends in sqlite3_result_error_nomem);
** everything allocated is freed on every path (matchStateFree); we never read
** z[n] or beyond; output text is valid UTF-8.
*/
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cjk_aux.h"
#include "cjk_chars.h"
#include "cjk_snippet.h"


#define CJK_MATCH_DEFAULT_CHARS 200
#define CJK_MATCH_MAX_LISTED 100
#define CJK_MATCH_DEFAULT_OPEN "**"
#define CJK_MATCH_DEFAULT_CLOSE "**"
#define CJK_MATCH_DEFAULT_ELLIPSIS "\xE2\x80\xA6" /* U+2026 */
/* literalPlan: plan to find the runs only when the column holds at most this
** many bytes per token position up to its last instance (a CJK letter is 3
** bytes and one position; finding reads a byte for a fraction of what
** tokenizing spends on it). */
#define CJK_LITERAL_SCAN_RATIO 24



/* ---- growable output buffer ------------------------------------------- */

typedef struct Buf {
  const CjkHost *h; /* allocator */
  char *a;
  size_t n, nAlloc;
  int bOom;
} Buf;

static int bufReserve(Buf *p, size_t nAdd) {
  size_t nNew;
  char *aNew;
  if (p->bOom) return 0;
  if (p->n + nAdd <= p->nAlloc) return 1;
  if (nAdd > ((size_t)INT_MAX) * 4 || p->n > ((size_t)INT_MAX) * 4) {
    p->bOom = 1; /* far beyond what SQLite can return anyway */
    return 0;
  }
  nNew = p->nAlloc ? p->nAlloc * 2 : 256;
  while (nNew < p->n + nAdd) nNew *= 2;
  aNew = p->h->realloc64(p->a, (sqlite3_uint64)nNew);
  if (!aNew) {
    p->bOom = 1;
    return 0;
  }
  p->a = aNew;
  p->nAlloc = nNew;
  return 1;
}

static void bufAppend(Buf *p, const void *z, size_t n) {
  if (n == 0 || !bufReserve(p, n)) return;
  /* memmove, not memcpy: glibc's memcpy symbol is versioned 2.14, and
  ** linking it would raise the wheel's manylinux floor from glibc 2.5 */
  memmove(p->a + p->n, z, n);
  p->n += n;
}

static void bufStr(Buf *p, const char *z) { bufAppend(p, z, strlen(z)); }

/* v in decimal (written here: a result can hold hundreds of numbers, and
** snprintf costs several times as much per number). */
static void bufInt(Buf *p, long long v) {
  char aNum[24];
  int i = (int)sizeof(aNum);
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    aNum[--i] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u);
  if (v < 0) aNum[--i] = '-';
  bufAppend(p, aNum + i, sizeof(aNum) - (size_t)i);
}


/* Where the bytes from z[i] that go into a JSON string as they are end:
** printable ASCII other than the quote and the backslash, and well-formed
** characters other than U+2028 and U+2029.  A snippet is mostly such runs,
** so jsonChars appends each with one copy. */
static int jsonPlainEnd(const unsigned char *z, int n, int i) {
  while (i < n) {
    unsigned c = z[i], cp;
    int j;
    if (c < 0x80) {
      if (c < 0x20 || c == '"' || c == '\\') break;
      i++;
      continue;
    }
    if (c >= 0xE1) { /* a run of three-byte characters, then a look for U+2028/9 in it */
      int n3 = 0, k;
      j = cjk_utf8_run3(z, i, n, &n3);
      for (k = i; k < j; k += 3) {
        if (z[k] == 0xE2 && z[k + 1] == 0x80 && (z[k + 2] & 0xFE) == 0xA8) return k;
      }
      if (j > i) {
        i = j;
        continue;
      }
    }
    j = cjk_utf8_step(z, n, i, &cp);
    if (cp == CJK_BADCHAR || cp == 0x2028 || cp == 0x2029) break;
    i = j;
  }
  return i;
}

/* Append z[0..n) as the inside of a JSON string: escaped, and with every
** malformed sequence replaced by U+FFFD. */
static void jsonChars(Buf *p, const unsigned char *z, int n) {
  static const char aHex[] = "0123456789abcdef";
  int i = 0;
  while (i < n && !p->bOom) {
    unsigned c = z[i], cp;
    int j = jsonPlainEnd(z, n, i);
    if (j > i) {
      bufAppend(p, z + i, (size_t)(j - i));
      i = j;
      continue;
    }
    if (c < 0x80) {
      char aEsc[6];
      switch (c) {
        case '"': bufAppend(p, "\\\"", 2); break;
        case '\\': bufAppend(p, "\\\\", 2); break;
        case '\n': bufAppend(p, "\\n", 2); break;
        case '\r': bufAppend(p, "\\r", 2); break;
        case '\t': bufAppend(p, "\\t", 2); break;
        default:
          aEsc[0] = '\\';
          aEsc[1] = 'u';
          aEsc[2] = '0';
          aEsc[3] = '0';
          aEsc[4] = aHex[(c >> 4) & 0xF];
          aEsc[5] = aHex[c & 0xF];
          bufAppend(p, aEsc, 6);
          break;
      }
      i++;
      continue;
    }
    j = cjk_utf8_strict(z, n, i, &cp);
    if (cp == CJK_BADCHAR) {
      bufAppend(p, "\xEF\xBF\xBD", 3);
    } else if (cp == 0x2028 || cp == 0x2029) { /* valid JSON, but not JavaScript */
      bufStr(p, cp == 0x2028 ? "\\u2028" : "\\u2029");
    } else {
      bufAppend(p, z + i, (size_t)(j - i));
    }
    i = j;
  }
}

static void jsonString(Buf *p, const char *z, int n) {
  bufAppend(p, "\"", 1);
  if (z && n > 0) jsonChars(p, (const unsigned char *)z, n);
  bufAppend(p, "\"", 1);
}

/* Append z[0..n) as it is, but with every malformed sequence replaced by
** U+FFFD (the layout 'fields' writes text so). */
static void textChars(Buf *p, const unsigned char *z, int n) {
  int i = 0;
  while (i < n && !p->bOom) {
    int j = i, k, nRun = 0;
    unsigned cp = 0;
    while (j < n) { /* the well-formed stretch from i: ASCII, three-byte runs, else one by one */
      k = cjk_utf8_run3(z, cjk_ascii_end(z, j, n), n, &nRun);
      if (k >= n) {
        j = n;
        break;
      }
      j = cjk_utf8_strict(z, n, k, &cp);
      if (cp == CJK_BADCHAR) {
        j = k;
        break;
      }
    }
    bufAppend(p, z + i, (size_t)(j - i));
    if (j < n) { /* a malformed sequence: one U+FFFD for it */
      bufAppend(p, "\xEF\xBF\xBD", 3);
      j = cjk_utf8_strict(z, n, j, &cp);
    }
    i = j;
  }
}

/* ---- re-tokenizing the snippet column ----------------------------------- */

typedef struct TokRec {
  int iPos;          /* token position */
  int iStart, iEnd;  /* byte range in the column text */
  int iText, nText;  /* token text in TokCollect.text */
} TokRec;

/* Placing instances by their text (cjk_collect_literal): a phrase whose
** query tokens are the overlapping bigrams of a run of plain CJK letters
** (cjk_plain_at), with its instances in the snippet column. */
typedef struct LitPhrase {
  int iText, nText; /* the run, in TokCollect.text: nSize + 1 letters of 3 bytes */
  int nSize;        /* its tokens */
  int nInst;        /* its instances in the column: */
  int *aOff;        /* their token positions, ascending */
  int *aAt;         /* the byte offsets of the run's occurrences, once found */
} LitPhrase;

/* Empty (nPhrase 0) unless every phrase with an instance in the column is
** such a run. */
typedef struct LitPlan {
  int nPhrase;
  LitPhrase *a;
  int *aIdx; /* per query phrase: its entry in a[], or -1 */
  int *aInt; /* storage of every aOff and aAt */
} LitPlan;

typedef struct TokCollect {
  const LitPlan *pLit; /* NULL: the column is tokenized */
  const int *aNeed; /* sorted, distinct positions whose tokens we keep */
  int nNeed;
  int iNeed;        /* first aNeed[] entry not yet passed */
  int iPos;         /* position of the last token seen (-1: none yet) */
  int nByte;        /* length of the column text */
  TokRec *aRec;
  int nRec, nRecAlloc;
  Buf text;         /* token texts */
} TokCollect;

int cjk_collect_token(void *pCtx, int tflags, const char *pToken, int nToken, int iStart, int iEnd) {
  TokCollect *p = (TokCollect *)pCtx;
  TokRec *r;
  if ((tflags & FTS5_TOKEN_COLOCATED) == 0 || p->iPos < 0) p->iPos++;
  while (p->iNeed < p->nNeed && p->aNeed[p->iNeed] < p->iPos) p->iNeed++;
  if (p->iNeed >= p->nNeed) return SQLITE_DONE; /* past every position we need */
  if (p->aNeed[p->iNeed] != p->iPos) return SQLITE_OK;
  if (p->nRec >= p->nRecAlloc) {
    int nNew = p->nRecAlloc ? p->nRecAlloc * 2 : 64;
    TokRec *aNew;
    if (nNew <= p->nRecAlloc) return SQLITE_NOMEM;
    aNew = p->text.h->realloc64(p->aRec, sizeof(TokRec) * (sqlite3_uint64)nNew);
    if (!aNew) return SQLITE_NOMEM;
    p->aRec = aNew;
    p->nRecAlloc = nNew;
  }
  if (nToken < 0 || !pToken) nToken = 0;
  if (iStart < 0) iStart = 0;
  if (iStart > p->nByte) iStart = p->nByte;
  if (iEnd < iStart) iEnd = iStart;
  if (iEnd > p->nByte) iEnd = p->nByte;
  r = &p->aRec[p->nRec];
  r->iPos = p->iPos;
  r->iStart = iStart;
  r->iEnd = iEnd;
  r->iText = (int)p->text.n;
  r->nText = nToken;
  if (p->text.n + (size_t)nToken > (size_t)INT_MAX) return SQLITE_NOMEM;
  if (nToken > 0) bufAppend(&p->text, pToken, (size_t)nToken);
  if (p->text.bOom) return SQLITE_NOMEM;
  p->nRec++;
  return SQLITE_OK;
}

/* Tokens the collector may be spared before the next position it keeps: the
** positions after the last one seen and before that one.  -1 when it keeps
** no more (it would answer the next token with SQLITE_DONE). */
int cjk_collect_skippable(void *pCtx) {
  const TokCollect *p = (const TokCollect *)pCtx;
  int iNext = p->iPos + 1, k = p->iNeed; /* iNext: the next token's position */
  while (k < p->nNeed && p->aNeed[k] < iNext) k++;
  return k < p->nNeed ? p->aNeed[k] - iNext : -1;
}

/* nToken tokens, none colocated, went by uncollected (at most what
** cjk_collect_skippable allowed). */
void cjk_collect_skip(void *pCtx, int nToken) {
  TokCollect *p = (TokCollect *)pCtx;
  if (nToken > 0) p->iPos += nToken;
}

/* Every occurrence of zPat[0..m) in z[0..n), overlapping ones too, in order:
** the first nMax offsets go to aAt.  Returns how many it found, but stops at
** nMax + 1.  Many starts are tested at once, and a start is worth comparing
** only where both z[j] == zPat[0] and z[j+m-1] == zPat[m-1].  Where the
** compiler has byte vectors, sixteen starts a step (a compare each, which
** SSE2 or NEON does in one instruction); else eight, in a 64-bit word: v
** holds z[j] ^ zPat[0] | z[j+m-1] ^ zPat[m-1] for each start j in i..i+7,
** and the zero-byte test is exact as a yes/no, whatever the byte order.  In
** CJK text a start passes about once in hundreds, so the scan costs about a
** step per sixteen (or eight) bytes, without the chain of dependent loads a
** search that skips ahead has. */
#if defined(__GNUC__) || defined(__clang__)
#define CJK_BYTE_VECTORS 1
typedef unsigned char CjkBytes16 __attribute__((vector_size(16)));
#endif
static int findAll(const unsigned char *z, int n, const unsigned char *zPat, int m, int *aAt, int nMax) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const uint64_t first = ones * zPat[0], last = ones * zPat[m > 0 ? m - 1 : 0];
  int i = 0, j, k = 0, iLast = n - m; /* the last start */
#ifdef CJK_BYTE_VECTORS
  CjkBytes16 vFirst, vLast;
#endif
  if (m <= 0 || m > n) return 0;
#ifdef CJK_BYTE_VECTORS
  memset(&vFirst, zPat[0], sizeof(vFirst));
  memset(&vLast, zPat[m - 1], sizeof(vLast));
#endif
  while (i <= iLast) {
    int iEnd = iLast + 1; /* the starts this step tests: i..iEnd-1 */
#ifdef CJK_BYTE_VECTORS
    if (i + 16 <= iLast + 1) {
      CjkBytes16 a, b, v;
      uint64_t w[2];
      /* in bounds: i + 15 + m - 1 <= iLast + m - 1 = n - 1 */
      memcpy(&a, z + i, sizeof(a));
      memcpy(&b, z + i + m - 1, sizeof(b));
      v = (CjkBytes16)((a == vFirst) & (b == vLast)); /* 0xFF where both bytes agree */
      memcpy(w, &v, sizeof(w));
      if ((w[0] | w[1]) == 0) {
        i += 16;
        continue;
      }
      iEnd = i + 16;
    } else
#endif
    if (i + 8 <= iLast + 1) {
      uint64_t a, b, v;
      /* in bounds: i + 7 + m - 1 <= iLast + m - 1 = n - 1 */
      memcpy(&a, z + i, 8);
      memcpy(&b, z + i + m - 1, 8);
      v = (a ^ first) | (b ^ last);
      if ((((v - ones) & ~v & highs)) == 0) {
        i += 8;
        continue;
      }
      iEnd = i + 8;
    }
    for (j = i; j < iEnd; j++) {
      if (z[j] == zPat[0] && z[j + m - 1] == zPat[m - 1] && memcmp(z + j, zPat, (size_t)m) == 0) {
        if (k < nMax) aAt[k] = j;
        if (++k > nMax) return k;
      }
    }
    i = iEnd;
  }
  return k;
}

static int cmpTokRec(const void *a, const void *b) {
  const TokRec *x = (const TokRec *)a, *y = (const TokRec *)b;
  if (x->iPos != y->iPos) return x->iPos < y->iPos ? -1 : 1;
  return (x->iStart > y->iStart) - (x->iStart < y->iStart);
}

int cjk_collect_planned(void *pCtx) {
  const LitPlan *L = ((const TokCollect *)pCtx)->pLit;
  return L && L->nPhrase > 0;
}

/* Why this is exact: the tokenizer calls it only when, under its options and
** for this text, a planned phrase matches only where its run's bytes stand
** (cjk_aux.h).  So its instances are some of the run's occurrences, in the
** same order; when the counts agree they are all of them, and the k-th
** instance (by position) stands on the k-th occurrence (by byte).  A query
** that keeps only some matches (NEAR, ^) leaves fewer instances than
** occurrences, and the column is tokenized instead. */
int cjk_collect_literal(void *pCtx, const char *zText, int nText, int *pbPlaced) {
  TokCollect *p = (TokCollect *)pCtx;
  const LitPlan *L = p->pLit;
  const unsigned char *z = (const unsigned char *)zText;
  size_t nRec = 0;
  int i, j, k, r;
  *pbPlaced = 0;
  if (!L || L->nPhrase == 0 || !z || nText != p->nByte) return SQLITE_OK;
  for (i = 0; i < L->nPhrase; i++) {
    const LitPhrase *ph = &L->a[i];
    const unsigned char *zRun = (const unsigned char *)p->text.a + ph->iText;
    if (findAll(z, nText, zRun, ph->nText, ph->aAt, ph->nInst) != ph->nInst) return SQLITE_OK;
    nRec += (size_t)ph->nInst * (size_t)ph->nSize;
  }
  if (nRec > (size_t)INT_MAX) return SQLITE_NOMEM;
  if ((int)nRec > p->nRecAlloc) {
    TokRec *aNew = p->text.h->realloc64(p->aRec, sizeof(TokRec) * (sqlite3_uint64)nRec);
    if (!aNew) return SQLITE_NOMEM;
    p->aRec = aNew;
    p->nRecAlloc = (int)nRec;
  }
  p->nRec = 0;
  for (i = 0; i < L->nPhrase; i++) {
    const LitPhrase *ph = &L->a[i];
    for (k = 0; k < ph->nInst; k++) {
      for (j = 0; j < ph->nSize; j++) {
        TokRec *t = &p->aRec[p->nRec++];
        t->iPos = ph->aOff[k] + j; /* no overflow: literalPlan checked */
        t->iStart = ph->aAt[k] + 3 * j;
        t->iEnd = t->iStart + 6;
        t->iText = ph->iText + 3 * j;
        t->nText = 6;
      }
    }
  }
  qsort(p->aRec, (size_t)p->nRec, sizeof(TokRec), cmpTokRec);
  for (r = 0, k = 0; r < p->nRec; r++) { /* phrases sharing a position share its bigram */
    if (k > 0 && p->aRec[k - 1].iPos == p->aRec[r].iPos && p->aRec[k - 1].iStart == p->aRec[r].iStart) continue;
    p->aRec[k++] = p->aRec[r];
  }
  p->nRec = k;
  *pbPlaced = 1;
  return SQLITE_OK;
}

/* Number of characters in a token's text (as the tokenizer writes them). */
static int tokenChars(const char *z, int n) {
  int i = 0, k = 0;
  while (i < n) {
    unsigned cp;
    i = cjk_utf8_next((const unsigned char *)z, n, i, &cp);
    k++;
  }
  return k;
}

/* If z[iStart..iEnd) is all CJK letters, return the end of its first nChar
** letters the way the tokenizer reads them (a voiced mark composes with the
** letter before it, variation selectors belong to it); otherwise return iEnd. */
static int cjkPrefixEnd(const unsigned char *z, int iStart, int iEnd, int nChar) {
  int i = iStart, k = 0, iCut = -1;
  while (i < iEnd) {
    unsigned cp, cp2;
    int j = cjk_utf8_next(z, iEnd, i, &cp);
    if (!cjk_is_cjk(cp)) return iEnd;
    if (j < iEnd && z[j] >= 0x80) {
      int j2 = cjk_utf8_next(z, iEnd, j, &cp2);
      if (cjk_is_cjk(cp2) && cjk_compose_voiced(cjk_fold_width(cp), cjk_fold_width(cp2)) != 0) {
        j = j2;
      }
    }
    j = cjk_skip_variation_selectors(z, iEnd, j); /* part of the letter, as for the tokenizer */
    if (++k == nChar) iCut = j;
    i = j;
  }
  return iCut < 0 ? iEnd : iCut;
}

/* ---- per-call state ---------------------------------------------------- */

typedef struct MatchArgs {
  const char *zLabels;
  int nLabels;
  long long nMax; /* max_chars */
  long long nListed; /* max_matches */
  const char *zOpen, *zClose, *zEllipsis;
  int nOpen, nClose, nEllipsis;
  int eLayout; /* CJK_LAYOUT_OBJECT, _ARRAY (the values without their keys) or _FIELDS */
} MatchArgs;

/* The result's layouts (cjk_aux.h). */
#define CJK_LAYOUT_OBJECT 0
#define CJK_LAYOUT_ARRAY 1
#define CJK_LAYOUT_FIELDS 2
#define CJK_FIELD_SEP "\x1f" /* U+001F, the unit separator, between two fields */

/* The row's phrase instances, read once from xInst.  Invariant: aInst holds
** nInst triples (phrase, column, token offset) with 0 <= phrase < nPhrase and
** offset >= 0; an instance that cannot be placed has column -1, so no column
** iterator ever yields it. */
typedef struct InstTable {
  int nCol, nPhrase, nInst;
  int *aInst;
  unsigned char *aSeen; /* nCol * nPhrase: phrase seen in column */
  int *aDistinct;       /* nCol: distinct phrases seen */
  int *aPhraseSize;     /* nPhrase */
} InstTable;

/* Walks the instances of one column, in xInst order:
**   for (instFirst(&it, t, iCol); it.i < t->nInst; instNext(&it)) ... */
typedef struct InstIter {
  const InstTable *t;
  int iCol;
  int i;              /* current instance, nInst when done */
  int iPhrase, iOff;  /* its phrase and first token position */
} InstIter;

/* Past the last instance iPhrase and iOff are -1: never read then (callers
** test i < nInst first), but defined, so no compiler sees them unset. */
static void instSeek(InstIter *it) {
  const InstTable *t = it->t;
  while (it->i < t->nInst && t->aInst[it->i * 3 + 1] != it->iCol) it->i++;
  if (it->i < t->nInst) {
    it->iPhrase = t->aInst[it->i * 3];
    it->iOff = t->aInst[it->i * 3 + 2];
  } else {
    it->iPhrase = it->iOff = -1;
  }
}

static void instFirst(InstIter *it, const InstTable *t, int iCol) {
  it->t = t;
  it->iCol = iCol;
  it->i = 0;
  instSeek(it);
}

static void instNext(InstIter *it) {
  it->i++;
  instSeek(it);
}

/* The query's tokens, to tell a bigram from the unigram colocated with it:
** token j of phrase i is azQ[aQtok[i] + j] (NULL when unknown). */
typedef struct QueryToks {
  int *aQtok;
  const char **azQ;
  int *anQ;
} QueryToks;

/* The snippet column.  z is NULL (and n 0) for a contentless table. */
typedef struct ColText {
  int iCol;
  const char *z;
  int n;
  const char *zLoc; /* its locale (FTS5 v4 hosts), else NULL */
  int nLoc;
} ColText;

/* A byte offset to turn into a character offset, written to *pOut. */
typedef struct OffQuery {
  int iByte;
  int bCeil; /* round up to the next character boundary (range ends) */
  int *pOut;
} OffQuery;

/* The arrays of one call, carved from blocks allocated through the host and
** freed together: a row's phases ask for about sixteen small arrays, and an
** allocation of each cost more than several of the phases' own work.  A
** block holds ARENA_BLOCK bytes, or one array larger than that alone. */
typedef struct ArenaBlock ArenaBlock;
struct ArenaBlock {
  ArenaBlock *pNext;
  size_t nByte, iUsed; /* bytes after the header, of which iUsed are carved */
};
#define ARENA_BLOCK 8192
#define ARENA_ALIGN 8 /* what SQLite's allocator guarantees */
#define ARENA_HEADER ((sizeof(ArenaBlock) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

typedef struct MatchState {
  const Fts5ExtensionApi *pApi;
  Fts5Context *pFts;
  const CjkHost *h; /* allocator */
  char *zErr;       /* where a phase writes its error message */
  int nErr;
  InstTable inst;
  ColText col;
  QueryToks q;
  int *aNeed; /* sorted, distinct token positions the column's instances cover */
  int nNeed;
  LitPlan lit;
  TokCollect tc;
  CjkSnipWork w;     /* w.aHit: the snippet column's instances, bytes then characters */
  CjkSnipWindow win;
  OffQuery *aQ;
  ArenaBlock *pArena; /* the blocks stateAlloc carves the arrays above from; it carves the first */
} MatchState;

static void matchStateFree(MatchState *s) {
  while (s->pArena) {
    ArenaBlock *pNext = s->pArena->pNext;
    s->h->free(s->pArena);
    s->pArena = pNext;
  }
  s->h->free(s->tc.aRec);
  s->h->free(s->tc.text.a);
}

/* nElem * szElem bytes (at least one element's), ARENA_ALIGN-aligned, from the
** arena; zeroed if bZero.  Sets *pRc on failure and does nothing after one. */
static void *stateAlloc(MatchState *s, size_t nElem, size_t szElem, int bZero, int *pRc) {
  ArenaBlock *b = s->pArena;
  size_t n;
  unsigned char *p;
  if (*pRc != SQLITE_OK) return 0;
  if (nElem == 0) nElem = 1;
  if (nElem > ((size_t)-1) / 4 / szElem) {
    *pRc = SQLITE_NOMEM;
    return 0;
  }
  n = (nElem * szElem + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (!b || b->nByte - b->iUsed < n) {
    size_t nByte = n > ARENA_BLOCK ? n : ARENA_BLOCK;
    b = s->h->malloc64((sqlite3_uint64)(ARENA_HEADER + nByte));
    if (!b) {
      *pRc = SQLITE_NOMEM;
      return 0;
    }
    b->nByte = nByte;
    b->iUsed = 0;
    if (s->pArena && n > ARENA_BLOCK) { /* a big array alone: keep carving the current block */
      b->pNext = s->pArena->pNext;
      s->pArena->pNext = b;
    } else {
      b->pNext = s->pArena;
      s->pArena = b;
    }
  }
  p = (unsigned char *)b + ARENA_HEADER + b->iUsed;
  b->iUsed += n;
  if (bZero) memset(p, 0, n);
  return p;
}

static void stateError(MatchState *s, int *pRc, int rc, const char *zWhat, int iArg) {
  /* FTS5 answers SQLITE_CORRUPT_VTAB when an external-content table lacks
  ** the row the index names (FTS5's own functions then fail the same way). */
  const char *zWhy = rc == SQLITE_CORRUPT_VTAB
                         ? ": the row is missing from the external content table, or the index is corrupt"
                         : "";
  snprintf(s->zErr, (size_t)s->nErr, "cjk_match: %s %d failed (error %d)%s", zWhat, iArg, rc, zWhy);
  *pRc = rc;
}


static int cmpInt(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int cmpOffQuery(const void *a, const void *b) {
  const OffQuery *x = (const OffQuery *)a, *y = (const OffQuery *)b;
  return (x->iByte > y->iByte) - (x->iByte < y->iByte);
}

/* Records [*pLo, *pHi) are the tokens at position iPos. */
static void tokensAt(const TokCollect *tc, int iPos, int *pLo, int *pHi) {
  int lo = 0, hi = tc->nRec;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (tc->aRec[mid].iPos < iPos) lo = mid + 1;
    else hi = mid;
  }
  *pLo = lo;
  for (hi = lo; hi < tc->nRec && tc->aRec[hi].iPos == iPos; hi++) {
  }
  *pHi = hi;
}

/* Does some token at iPos start with (or equal) z[0..n)? */
static int someTokenStartsWith(const TokCollect *tc, int iPos, const char *z, int n) {
  int lo, hi, r;
  tokensAt(tc, iPos, &lo, &hi);
  for (r = lo; r < hi; r++) {
    const TokRec *t = &tc->aRec[r];
    if (t->nText >= n && memcmp(tc->text.a + t->iText, z, (size_t)n) == 0) return 1;
  }
  return 0;
}

/* Without xQueryToken (Fts5ExtensionApi.iVersion < 3, SQLite before 3.45),
** guess token j of phrase iPhrase from the row itself: it is a token found at
** the first instance's position, or that token's first character (a
** one-character prefix query), and every other instance of the phrase in the
** column has a token starting with it.  The longest such guess wins; with a
** single instance that is the whole token, as highlight() would show.  Sets
** azQ/anQ (pointing into the collected token texts) or leaves them unknown. */
static void inferQueryToken(MatchState *s, int iPhrase, int j) {
  const TokCollect *tc = &s->tc;
  InstIter it, first;
  int lo, hi, r, pass;
  for (instFirst(&first, &s->inst, s->col.iCol); first.i < s->inst.nInst; instNext(&first)) {
    if (first.iPhrase == iPhrase && first.iOff <= INT_MAX - j) break;
  }
  if (first.i >= s->inst.nInst) return;
  tokensAt(tc, first.iOff + j, &lo, &hi);
  /* pass 0: whole tokens, longest first; pass 1: their first characters */
  for (pass = 0; pass < 2; pass++) {
    const char *zBest = 0;
    int nBest = 0, bTie = 0;
    for (r = lo; r < hi; r++) {
      const TokRec *t = &tc->aRec[r];
      const char *z = tc->text.a + t->iText;
      int n = t->nText, bAll = 1;
      if (n <= 0) continue;
      if (pass == 1) {
        unsigned cp;
        n = cjk_utf8_next((const unsigned char *)z, n, 0, &cp);
        if (n == t->nText) continue; /* tried in pass 0 */
      }
      if (n < nBest || (n == nBest && zBest && memcmp(z, zBest, (size_t)n) == 0)) continue;
      for (it = first, instNext(&it); it.i < s->inst.nInst && bAll; instNext(&it)) {
        if (it.iPhrase != iPhrase || it.iOff > INT_MAX - j) continue;
        if (!someTokenStartsWith(tc, it.iOff + j, z, n)) bAll = 0;
      }
      if (bAll) {
        bTie = n == nBest; /* two different guesses fit the row alike */
        zBest = z;
        nBest = n;
      }
    }
    /* A tie (山大a大山: the unigrams 山 and 大 stand at both instances of "大",
    ** so "山" fits as well) cannot be told from the row: the token stays
    ** unknown and every token at the position is marked, the match with it. */
    if (bTie) return;
    if (zBest) {
      s->q.azQ[s->q.aQtok[iPhrase] + j] = zBest;
      s->q.anQ[s->q.aQtok[iPhrase] + j] = nBest;
      return;
    }
  }
}


/* Label of column i: the i-th comma-separated field of zLabels, trimmed, or
** the column number written into aNum when that is missing or empty. */
static void columnLabel(const MatchArgs *pArgs, int iCol, char *aNum, size_t nNum,
                        const char **pz, int *pn) {
  const char *z = pArgs->zLabels, *zEnd = z ? z + pArgs->nLabels : 0;
  int i = 0;
  while (z && z <= zEnd) {
    const char *zComma = z;
    while (zComma < zEnd && *zComma != ',') zComma++;
    if (i == iCol) {
      const char *a = z, *b = zComma;
      while (a < b && (*a == ' ' || *a == '\t')) a++;
      while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
      if (b > a) {
        *pz = a;
        *pn = (int)(b - a);
        return;
      }
      break;
    }
    i++;
    z = zComma + 1;
  }
  snprintf(aNum, nNum, "%d", iCol);
  *pz = aNum;
  *pn = (int)strlen(aNum);
}

static void jsonLabel(Buf *pOut, const MatchArgs *pArgs, int iCol) {
  char aNum[24];
  const char *z;
  int n;
  columnLabel(pArgs, iCol, aNum, sizeof(aNum), &z, &n);
  jsonString(pOut, z, n);
}


/* ---- phases ------------------------------------------------------------- */

/* Is instance i the same (phrase, column, offset) as one before it?  xInst
** lists instances in position order, so a repeat stands among the few
** before it at the same position; the look back is bounded. */
static int instRepeats(const InstTable *t, int i) {
  const int *a = &t->aInst[i * 3];
  int j, nLook = 0;
  for (j = i - 1; j >= 0 && nLook < 64; j--, nLook++) {
    const int *b = &t->aInst[j * 3];
    if (b[1] == -1) continue;
    if (b[1] != a[1] || b[2] != a[2]) break;
    if (b[0] == a[0]) return 1;
  }
  return 0;
}

/* InstTable from xInst; also which phrases each column holds. */
static void instLoad(MatchState *s, int *pRc) {
  const Fts5ExtensionApi *pApi = s->pApi;
  InstTable *t = &s->inst;
  int i, rc;
  if (*pRc != SQLITE_OK) return;
  t->nCol = pApi->xColumnCount(s->pFts);
  t->nPhrase = pApi->xPhraseCount(s->pFts);
  if (t->nCol < 0) t->nCol = 0;
  if (t->nPhrase < 0) t->nPhrase = 0;
  rc = pApi->xInstCount(s->pFts, &t->nInst);
  if (rc != SQLITE_OK) {
    snprintf(s->zErr, (size_t)s->nErr, "cjk_match: reading the phrase instances failed (error %d)", rc);
    *pRc = rc;
    return;
  }
  if (t->nInst < 0 || t->nPhrase == 0) t->nInst = 0;
  t->aInst = stateAlloc(s, (size_t)t->nInst * 3, sizeof(int), 0, pRc);
  t->aSeen = stateAlloc(s, (size_t)t->nCol * (size_t)t->nPhrase, 1, 1, pRc);
  t->aDistinct = stateAlloc(s, (size_t)t->nCol, sizeof(int), 1, pRc);
  t->aPhraseSize = stateAlloc(s, (size_t)t->nPhrase, sizeof(int), 1, pRc);
  if (*pRc != SQLITE_OK) return;
  for (i = 0; i < t->nPhrase; i++) t->aPhraseSize[i] = pApi->xPhraseSize(s->pFts, i);
  for (i = 0; i < t->nInst; i++) {
    int *a = &t->aInst[i * 3];
    size_t iSeen;
    rc = pApi->xInst(s->pFts, i, &a[0], &a[1], &a[2]);
    if (rc != SQLITE_OK) {
      stateError(s, pRc, rc, "reading phrase instance", i);
      return;
    }
    if (a[0] < 0 || a[0] >= t->nPhrase || a[1] < 0 || a[1] >= t->nCol || a[2] < 0) {
      a[1] = -1; /* ignore an instance we cannot place */
      continue;
    }
    if (instRepeats(t, i)) {
      a[1] = -1; /* FTS5 may report one instance twice: it counts once */
      continue;
    }
    iSeen = (size_t)a[1] * (size_t)t->nPhrase + (size_t)a[0];
    if (!t->aSeen[iSeen]) {
      t->aSeen[iSeen] = 1;
      t->aDistinct[a[1]]++;
    }
  }
}

/* The matched column with the most distinct phrases (the lowest on ties), or
** -1 when no column has an instance. */
static int instBestColumn(const InstTable *t) {
  int i, iCol = -1;
  for (i = 0; i < t->nCol; i++) {
    if (t->aDistinct[i] > 0 && (iCol < 0 || t->aDistinct[i] > t->aDistinct[iCol])) iCol = i;
  }
  return iCol;
}

/* With no instance anywhere: the first column with non-space text (else 0). */
static int firstTextColumn(MatchState *s, int *pRc) {
  int i;
  for (i = 0; i < s->inst.nCol && *pRc == SQLITE_OK; i++) {
    const char *z = 0;
    int n = 0, j = 0;
    int rc = s->pApi->xColumnText(s->pFts, i, &z, &n);
    if (rc != SQLITE_OK) {
      stateError(s, pRc, rc, "reading column", i);
      break;
    }
    if (!z) n = 0;
    while (j < n) {
      unsigned cp;
      int jNext = cjk_utf8_step((const unsigned char *)z, n, j, &cp);
      if (!cjk_space_cp(cp)) return i;
      j = jNext;
    }
  }
  return 0;
}

/* ColText for column iCol. */
static void columnLoad(MatchState *s, int iCol, int *pRc) {
  ColText *c = &s->col;
  int rc;
  c->iCol = iCol;
  if (*pRc != SQLITE_OK || s->inst.nCol == 0) return;
  if (s->pApi->iVersion >= 4 && s->pApi->xColumnLocale) {
    if (s->pApi->xColumnLocale(s->pFts, iCol, &c->zLoc, &c->nLoc) != SQLITE_OK) {
      c->zLoc = 0;
      c->nLoc = 0;
    }
  }
  rc = s->pApi->xColumnText(s->pFts, iCol, &c->z, &c->n);
  if (rc != SQLITE_OK) {
    stateError(s, pRc, rc, "reading column", iCol);
    return;
  }
  if (!c->z || c->n < 0) {
    c->z = 0;
    c->n = 0;
  }
}

/* aNeed: every token position an instance of the snippet column covers. */
static void needPositions(MatchState *s, int *pRc) {
  const InstTable *t = &s->inst;
  InstIter it;
  size_t nAlloc = 0;
  int i, k;
  if (*pRc != SQLITE_OK) return;
  for (instFirst(&it, t, s->col.iCol); it.i < t->nInst; instNext(&it)) {
    if (t->aPhraseSize[it.iPhrase] > 0) nAlloc += (size_t)t->aPhraseSize[it.iPhrase];
  }
  if (nAlloc > (size_t)INT_MAX) *pRc = SQLITE_NOMEM;
  s->aNeed = stateAlloc(s, nAlloc, sizeof(int), 0, pRc);
  if (*pRc != SQLITE_OK) return;
  for (instFirst(&it, t, s->col.iCol); it.i < t->nInst; instNext(&it)) {
    int j;
    for (j = 0; j < t->aPhraseSize[it.iPhrase] && it.iOff <= INT_MAX - j; j++) {
      s->aNeed[s->nNeed++] = it.iOff + j;
    }
  }
  qsort(s->aNeed, (size_t)s->nNeed, sizeof(int), cmpInt);
  for (i = 0, k = 0; i < s->nNeed; i++) {
    if (k == 0 || s->aNeed[k - 1] != s->aNeed[i]) s->aNeed[k++] = s->aNeed[i];
  }
  s->nNeed = k;
}

/* QueryToks from xQueryToken (v3+ hosts); unknown tokens stay NULL. */
static void queryTokensLoad(MatchState *s, int *pRc) {
  const InstTable *t = &s->inst;
  QueryToks *q = &s->q;
  size_t nQ = 0;
  int i, k;
  if (*pRc != SQLITE_OK) return;
  for (i = 0; i < t->nPhrase; i++) {
    if (t->aPhraseSize[i] > 0) nQ += (size_t)t->aPhraseSize[i];
  }
  if (nQ > (size_t)INT_MAX) *pRc = SQLITE_NOMEM;
  q->aQtok = stateAlloc(s, (size_t)t->nPhrase, sizeof(int), 1, pRc);
  q->azQ = (const char **)stateAlloc(s, nQ, sizeof(char *), 1, pRc);
  q->anQ = stateAlloc(s, nQ, sizeof(int), 1, pRc);
  if (*pRc != SQLITE_OK) return;
  for (i = 0, k = 0; i < t->nPhrase; i++) {
    int j;
    q->aQtok[i] = k;
    for (j = 0; j < t->aPhraseSize[i]; j++, k++) {
      const char *zTok = 0;
      int nTok = 0;
      if (s->pApi->iVersion < 3 || !s->pApi->xQueryToken) continue;
      if (s->pApi->xQueryToken(s->pFts, i, j, &zTok, &nTok) == SQLITE_OK && zTok && nTok > 0) {
        q->azQ[k] = zTok;
        q->anQ[k] = nTok;
      }
    }
  }
}

/* LitPlan for the snippet column, when every phrase with an instance there
** has known query tokens (xQueryToken) that are bigrams of two plain CJK
** letters, each starting with the letter the one before ended with; the
** column's tokenizer decides whether to use it (cjk_collect_literal).  Not
** planned when the column's text is long beside its last instance: finding
** the runs reads all of it, while the tokenizer stops after that instance. */
static void literalPlan(MatchState *s, int *pRc) {
  const InstTable *t = &s->inst;
  LitPlan *L = &s->lit;
  InstIter it;
  int i, j, nPhrase = 0, nInst = 0, iLast = 0, iUsed = 0;
  if (*pRc != SQLITE_OK || s->pApi->iVersion < 3) return;
  for (instFirst(&it, t, s->col.iCol); it.i < t->nInst; instNext(&it)) {
    if (it.iOff > INT_MAX - 2 - t->aPhraseSize[it.iPhrase]) return;
    if (it.iOff + t->aPhraseSize[it.iPhrase] > iLast) iLast = it.iOff + t->aPhraseSize[it.iPhrase];
    nInst++;
  }
  if (nInst == 0 || (long long)s->col.n > CJK_LITERAL_SCAN_RATIO * ((long long)iLast + 1)) return;
  for (i = 0; i < t->nPhrase; i++) {
    const unsigned char *zPrev = 0;
    if (!t->aSeen[(size_t)s->col.iCol * (size_t)t->nPhrase + (size_t)i]) continue;
    if (t->aPhraseSize[i] < 1) return;
    for (j = 0; j < t->aPhraseSize[i]; j++) {
      const unsigned char *zQ = (const unsigned char *)s->q.azQ[s->q.aQtok[i] + j];
      if (!zQ || s->q.anQ[s->q.aQtok[i] + j] != 6 || !cjk_plain_at(zQ, 6, 0) || !cjk_plain_at(zQ, 6, 3)) return;
      if (zPrev && memcmp(zPrev + 3, zQ, 3) != 0) return;
      zPrev = zQ;
    }
    nPhrase++;
  }
  L->a = stateAlloc(s, (size_t)nPhrase, sizeof(LitPhrase), 1, pRc);
  L->aIdx = stateAlloc(s, (size_t)t->nPhrase, sizeof(int), 0, pRc);
  L->aInt = stateAlloc(s, (size_t)nInst * 2, sizeof(int), 0, pRc);
  if (*pRc != SQLITE_OK) return;
  for (i = 0; i < t->nPhrase; i++) {
    LitPhrase *ph;
    L->aIdx[i] = -1;
    if (!t->aSeen[(size_t)s->col.iCol * (size_t)t->nPhrase + (size_t)i]) continue;
    L->aIdx[i] = L->nPhrase;
    ph = &L->a[L->nPhrase++];
    ph->nSize = t->aPhraseSize[i];
    ph->iText = (int)s->tc.text.n;
    ph->nText = 3 * (ph->nSize + 1);
    bufAppend(&s->tc.text, s->q.azQ[s->q.aQtok[i]], 6);
    for (j = 1; j < ph->nSize; j++) bufAppend(&s->tc.text, s->q.azQ[s->q.aQtok[i] + j] + 3, 3);
  }
  if (s->tc.text.bOom || s->tc.text.n > (size_t)INT_MAX) {
    *pRc = SQLITE_NOMEM;
    return;
  }
  for (instFirst(&it, t, s->col.iCol); it.i < t->nInst; instNext(&it)) L->a[L->aIdx[it.iPhrase]].nInst++;
  for (i = 0; i < L->nPhrase; i++) {
    L->a[i].aOff = L->aInt + iUsed;
    L->a[i].aAt = L->aInt + iUsed + L->a[i].nInst;
    iUsed += 2 * L->a[i].nInst;
    L->a[i].nInst = 0;
  }
  for (instFirst(&it, t, s->col.iCol); it.i < t->nInst; instNext(&it)) {
    LitPhrase *ph = &L->a[L->aIdx[it.iPhrase]];
    if (ph->nInst > 0 && ph->aOff[ph->nInst - 1] >= it.iOff) { /* not ascending: no plan */
      L->nPhrase = 0;
      return;
    }
    ph->aOff[ph->nInst++] = it.iOff;
  }
  s->tc.pLit = L;
}

/* The snippet column re-tokenized: tc holds the tokens at aNeed's positions;
** then the query tokens a v2 host could not tell us are inferred. */
static void columnRetokenize(MatchState *s, int *pRc) {
  const Fts5ExtensionApi *pApi = s->pApi;
  int rc, i, j;
  if (*pRc != SQLITE_OK || s->nNeed == 0) return;
  s->tc.aNeed = s->aNeed;
  s->tc.nNeed = s->nNeed;
  s->tc.iPos = -1;
  s->tc.nByte = s->col.n;
  if (pApi->iVersion >= 4 && pApi->xTokenize_v2) {
    rc = pApi->xTokenize_v2(s->pFts, s->col.z, s->col.n, s->col.zLoc, s->col.nLoc, (void *)&s->tc,
                            cjk_collect_token);
  } else {
    rc = pApi->xTokenize(s->pFts, s->col.z, s->col.n, (void *)&s->tc, cjk_collect_token);
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK; /* a tokenizer that passes our stop on */
  if (rc == SQLITE_NOMEM) {
    *pRc = rc;
  } else if (rc != SQLITE_OK) {
    stateError(s, pRc, rc, "re-tokenizing column", s->col.iCol);
  }
  if (*pRc != SQLITE_OK) return;
  for (i = 0; i < s->inst.nPhrase; i++) {
    for (j = 0; j < s->inst.aPhraseSize[i]; j++) {
      if (!s->q.azQ[s->q.aQtok[i] + j]) inferQueryToken(s, i, j);
    }
  }
}


/* The byte range [*pStart, *pEnd) the instance at it covers: its tokens'
** ranges joined; where several tokens share a position, the ones matching
** the query token (exact, else as a prefix), else all.  Returns 0 when no
** token lies at its positions. */
static int instanceBytes(const MatchState *s, const InstIter *it, int *pStart, int *pEnd) {
  const TokCollect *tc = &s->tc;
  int nSize = s->inst.aPhraseSize[it->iPhrase], j, iStart = INT_MAX, iEnd = -1;
  for (j = 0; j < nSize && it->iOff <= INT_MAX - j; j++) {
    int lo, rEnd, r, bExact = 0, bPrefix = 0;
    const char *zQ = s->q.azQ[s->q.aQtok[it->iPhrase] + j];
    int nQ = s->q.anQ[s->q.aQtok[it->iPhrase] + j];
    tokensAt(tc, it->iOff + j, &lo, &rEnd);
    for (r = lo; zQ && r < rEnd; r++) {
      const TokRec *t = &tc->aRec[r];
      const char *zT = tc->text.a + t->iText;
      if (t->nText == nQ && memcmp(zT, zQ, (size_t)nQ) == 0) bExact = 1;
      if (t->nText > nQ && memcmp(zT, zQ, (size_t)nQ) == 0) bPrefix = 1;
    }
    for (r = lo; r < rEnd; r++) {
      const TokRec *t = &tc->aRec[r];
      int tEnd = t->iEnd;
      if (bExact || bPrefix) {
        const char *zT = tc->text.a + t->iText;
        if (t->nText < nQ || memcmp(zT, zQ, (size_t)nQ) != 0) continue;
        if (t->nText > nQ) {
          /* A prefix match.  Only the last token of a phrase can be a
          ** prefix; there it counts even beside an exact match, since
          ** "山"* matches both tokens of a run ending 山山 (bigram 山山
          ** and the unigram 山 colocated with it). */
          if (bExact && j != nSize - 1) continue;
          tEnd = cjkPrefixEnd((const unsigned char *)s->col.z, t->iStart, t->iEnd, tokenChars(zQ, nQ));
        }
      }
      if (t->iStart < iStart) iStart = t->iStart;
      if (tEnd > iEnd) iEnd = tEnd;
    }
  }
  if (iEnd < 0 || iStart > iEnd) return 0;
  *pStart = iStart;
  *pEnd = iEnd;
  return 1;
}

/* w.aHit: one byte range per instance of the snippet column. */
static void hitsFromInstances(MatchState *s, int *pRc) {
  InstIter it;
  s->w.aHit = stateAlloc(s, (size_t)s->inst.nInst, sizeof(CjkSnipHit), 0, pRc);
  if (*pRc != SQLITE_OK) return;
  for (instFirst(&it, &s->inst, s->col.iCol); it.i < s->inst.nInst; instNext(&it)) {
    CjkSnipHit *h = &s->w.aHit[s->w.nHit];
    if (!instanceBytes(s, &it, &h->iStart, &h->iEnd)) continue;
    h->iPhrase = it.iPhrase;
    h->iByte = h->iStart; /* hitsToChars turns iStart into characters */
    h->iRange = -1;
    s->w.nHit++;
  }
}

/* Byte offsets of w.aHit -> character offsets, in one scan of the column.
** A start inside a character rounds down, an end up. */
static void hitsToChars(MatchState *s, int *pRc) {
  const unsigned char *z = (const unsigned char *)s->col.z;
  int nQ = s->w.nHit * 2, iq = 0, u = 0, b = 0, i;
  if (*pRc != SQLITE_OK || nQ == 0) return;
  s->aQ = stateAlloc(s, (size_t)nQ, sizeof(OffQuery), 0, pRc);
  if (*pRc != SQLITE_OK) return;
  for (i = 0; i < s->w.nHit; i++) {
    s->aQ[2 * i].iByte = s->w.aHit[i].iStart;
    s->aQ[2 * i].bCeil = 0;
    s->aQ[2 * i].pOut = &s->w.aHit[i].iStart;
    s->aQ[2 * i + 1].iByte = s->w.aHit[i].iEnd;
    s->aQ[2 * i + 1].bCeil = 1;
    s->aQ[2 * i + 1].pOut = &s->w.aHit[i].iEnd;
  }
  qsort(s->aQ, (size_t)nQ, sizeof(OffQuery), cmpOffQuery);
  while (b < s->col.n && iq < nQ) {
    unsigned cp;
    int bNext, b0 = b;
    /* ASCII before the next offset asked for: a character per byte */
    int iLim = s->aQ[iq].iByte < s->col.n ? s->aQ[iq].iByte : s->col.n;
    b = cjk_ascii_end(z, b, iLim);
    u += b - b0;
    /* three-byte characters wholly before the next offset asked for: one
    ** character each */
    b = cjk_utf8_run3(z, b, iLim, &u);
    if (b >= s->col.n) break;
    bNext = cjk_utf8_step(z, s->col.n, b, &cp);
    while (iq < nQ && s->aQ[iq].iByte < bNext) {
      *s->aQ[iq].pOut = (s->aQ[iq].iByte <= b || !s->aQ[iq].bCeil) ? u : u + 1;
      iq++;
    }
    u++;
    b = bNext;
  }
  for (; iq < nQ; iq++) *s->aQ[iq].pOut = u;
}

/* The window, by the one snippet rule (cjk_snippet.c). */
static void snippetChoose(MatchState *s, long long nMax, int *pRc) {
  CjkSnipWork *w = &s->w;
  int nRegion;
  if (*pRc != SQLITE_OK) return;
  /* The region never exceeds the column's bytes (each character is one). */
  nRegion = cjk_snip_region_size(nMax, s->col.n);
  w->nPhrase = s->inst.nPhrase;
  w->aRange = stateAlloc(s, (size_t)w->nHit, sizeof(CjkSnipRange), 0, pRc);
  w->aCnt = stateAlloc(s, (size_t)w->nPhrase, sizeof(int), 1, pRc);
  w->aCp = stateAlloc(s, (size_t)nRegion, sizeof(unsigned), 0, pRc);
  w->aOff = stateAlloc(s, (size_t)nRegion + 1, sizeof(int), 0, pRc);
  if (*pRc != SQLITE_OK) return;
  w->nRegionAlloc = nRegion;
  if (cjk_snip_choose((const unsigned char *)s->col.z, s->col.n, nMax, w, &s->win) != 0) {
    snprintf(s->zErr, (size_t)s->nErr, "cjk_match: choosing the snippet window failed");
    *pRc = SQLITE_ERROR;
  }
}


/* Member zKey's name (zKey: its JSON, the separator before it included:
** "{\"matched_in\":" or ",\"column\":"), or in the array layout only the
** separator, "{" read as "[". */
static void jsonKey(Buf *pOut, const MatchArgs *pArgs, const char *zKey) {
  if (pArgs->eLayout == CJK_LAYOUT_ARRAY) {
    bufAppend(pOut, zKey[0] == '{' ? "[" : ",", 1);
  } else {
    bufStr(pOut, zKey);
  }
}

static void jsonMatchedIn(Buf *pOut, const MatchArgs *pArgs, const InstTable *t) {
  int i, k = 0;
  jsonKey(pOut, pArgs, "{\"matched_in\":");
  bufAppend(pOut, "[", 1);
  for (i = 0; i < t->nCol; i++) {
    if (t->aDistinct[i] == 0) continue;
    if (k++) bufAppend(pOut, ",", 1);
    jsonLabel(pOut, pArgs, i);
  }
  bufAppend(pOut, "]", 1);
}

/* The snippet: the window's text with every highlight in it between the
** markers, an ellipsis on each cut side; each piece of text written by
** xChars (jsonChars or textChars). */
static void snippetText(Buf *pOut, const MatchArgs *pArgs, const MatchState *s,
                        void (*xChars)(Buf *, const unsigned char *, int)) {
  const unsigned char *z = (const unsigned char *)s->col.z;
  const CjkSnipWork *w = &s->w;
  const CjkSnipWindow *win = &s->win;
  int r = win->iFirstShown < 0 ? w->nRange : win->iFirstShown;
  long long c = win->iStart;
#define OFF(ch) (w->aOff[(ch) - win->iRegion])
  if (win->bCutBefore) xChars(pOut, (const unsigned char *)pArgs->zEllipsis, pArgs->nEllipsis);
  while (c < win->iEnd) {
    if (r < w->nRange && w->aRange[r].iStart <= c) {
      long long e = w->aRange[r].iEnd < win->iEnd ? w->aRange[r].iEnd : win->iEnd;
      xChars(pOut, (const unsigned char *)pArgs->zOpen, pArgs->nOpen);
      xChars(pOut, z + OFF(c), OFF(e) - OFF(c));
      xChars(pOut, (const unsigned char *)pArgs->zClose, pArgs->nClose);
      c = e;
      r++;
    } else {
      long long e = (r < w->nRange && w->aRange[r].iStart < win->iEnd) ? w->aRange[r].iStart : win->iEnd;
      xChars(pOut, z + OFF(c), OFF(e) - OFF(c));
      c = e;
    }
  }
#undef OFF
  if (win->bCutAfter) xChars(pOut, (const unsigned char *)pArgs->zEllipsis, pArgs->nEllipsis);
}

/* "column", then "snippet", then "start"/"end". */
static void jsonSnippet(Buf *pOut, const MatchArgs *pArgs, const MatchState *s) {
  const CjkSnipWork *w = &s->w;
  const CjkSnipWindow *win = &s->win;
  jsonKey(pOut, pArgs, ",\"column\":");
  if (s->inst.nCol > 0) {
    jsonLabel(pOut, pArgs, s->col.iCol);
  } else {
    bufStr(pOut, "null");
  }
  jsonKey(pOut, pArgs, ",\"snippet\":");
  bufAppend(pOut, "\"", 1);
  snippetText(pOut, pArgs, s, jsonChars);
  bufAppend(pOut, "\"", 1);
  jsonKey(pOut, pArgs, ",\"start\":");
  if (win->iFirstShown >= 0) {
    bufInt(pOut, w->aRange[win->iFirstShown].iStart);
  } else {
    bufStr(pOut, "null");
  }
  jsonKey(pOut, pArgs, ",\"end\":");
  if (win->iFirstShown >= 0) {
    bufInt(pOut, w->aRange[win->iFirstShown].iEnd);
  } else {
    bufStr(pOut, "null");
  }
}

/* "window", "cut", "matches", "match_count" and the closing brace (bracket). */
static void jsonTail(Buf *pOut, const MatchArgs *pArgs, const MatchState *s) {
  const CjkSnipWork *w = &s->w;
  int i;
  jsonKey(pOut, pArgs, ",\"window\":");
  bufAppend(pOut, "[", 1);
  bufInt(pOut, s->win.iStart);
  bufAppend(pOut, ",", 1);
  bufInt(pOut, s->win.iEnd);
  bufAppend(pOut, "]", 1);
  jsonKey(pOut, pArgs, ",\"cut\":");
  bufStr(pOut, s->win.bCutBefore ? "[true," : "[false,");
  bufStr(pOut, s->win.bCutAfter ? "true]" : "false]");
  jsonKey(pOut, pArgs, ",\"matches\":");
  bufAppend(pOut, "[", 1);
  for (i = 0; i < w->nRange && i < pArgs->nListed; i++) {
    if (i) bufAppend(pOut, ",", 1);
    bufAppend(pOut, "[", 1);
    bufInt(pOut, w->aRange[i].iStart);
    bufAppend(pOut, ",", 1);
    bufInt(pOut, w->aRange[i].iEnd);
    bufAppend(pOut, "]", 1);
  }
  bufAppend(pOut, "]", 1);
  jsonKey(pOut, pArgs, ",\"match_count\":");
  bufInt(pOut, w->nRange);
  bufAppend(pOut, pArgs->eLayout == CJK_LAYOUT_ARRAY ? "]" : "}", 1);
}

/* Column iCol's label as a field: its number when the label holds a
** control character (it could hold the separator). */
static void fieldLabel(Buf *pOut, const MatchArgs *pArgs, int iCol) {
  char aNum[24];
  const char *z;
  int n, i;
  columnLabel(pArgs, iCol, aNum, sizeof(aNum), &z, &n);
  for (i = 0; i < n && (unsigned char)z[i] >= 0x20; i++) {
  }
  if (i < n) {
    snprintf(aNum, sizeof(aNum), "%d", iCol);
    z = aNum;
    n = (int)strlen(aNum);
  }
  textChars(pOut, (const unsigned char *)z, n);
}

/* The layout 'fields': the values of the other layouts but "matches", as
** text fields between separators, the snippet last, so that it may hold any
** character (cjk_aux.h). */
static void fieldsOut(Buf *pOut, const MatchArgs *pArgs, const MatchState *s) {
  const InstTable *t = &s->inst;
  const CjkSnipWork *w = &s->w;
  const CjkSnipWindow *win = &s->win;
  int i, k = 0;
  for (i = 0; i < t->nCol; i++) {
    if (t->aDistinct[i] == 0) continue;
    if (k++) bufAppend(pOut, ",", 1);
    fieldLabel(pOut, pArgs, i);
  }
  bufStr(pOut, CJK_FIELD_SEP);
  if (t->nCol > 0) fieldLabel(pOut, pArgs, s->col.iCol);
  bufStr(pOut, CJK_FIELD_SEP);
  if (win->iFirstShown >= 0) bufInt(pOut, w->aRange[win->iFirstShown].iStart);
  bufStr(pOut, CJK_FIELD_SEP);
  if (win->iFirstShown >= 0) bufInt(pOut, w->aRange[win->iFirstShown].iEnd);
  bufStr(pOut, CJK_FIELD_SEP);
  bufInt(pOut, win->iStart);
  bufStr(pOut, CJK_FIELD_SEP);
  bufInt(pOut, win->iEnd);
  bufStr(pOut, win->bCutBefore ? CJK_FIELD_SEP "1" CJK_FIELD_SEP : CJK_FIELD_SEP "0" CJK_FIELD_SEP);
  bufStr(pOut, win->bCutAfter ? "1" CJK_FIELD_SEP : "0" CJK_FIELD_SEP);
  bufInt(pOut, w->nRange);
  bufStr(pOut, CJK_FIELD_SEP);
  snippetText(pOut, pArgs, s, textChars);
}

/* Run the whole function, writing the result into pOut by its layout.
** Returns SQLITE_OK, or an error code with a message in s->zErr. */
static int matchRun(MatchState *s, const MatchArgs *pArgs, Buf *pOut) {
  int rc = SQLITE_OK, iCol;
  instLoad(s, &rc);
  if (rc != SQLITE_OK) return rc;
  iCol = instBestColumn(&s->inst);
  if (iCol < 0) iCol = firstTextColumn(s, &rc);
  columnLoad(s, iCol, &rc);
  if (rc == SQLITE_OK && s->inst.nCol > 0 && s->inst.aDistinct[iCol] > 0 && s->col.n > 0) {
    needPositions(s, &rc);
    queryTokensLoad(s, &rc);
    literalPlan(s, &rc);
    columnRetokenize(s, &rc);
    hitsFromInstances(s, &rc);
    hitsToChars(s, &rc);
  }
  snippetChoose(s, pArgs->nMax, &rc);
  if (rc != SQLITE_OK) return rc;
  if (pArgs->eLayout == CJK_LAYOUT_FIELDS) {
    fieldsOut(pOut, pArgs, s);
  } else {
    jsonMatchedIn(pOut, pArgs, &s->inst);
    jsonSnippet(pOut, pArgs, s);
    jsonTail(pOut, pArgs, s);
  }
  return pOut->bOom ? SQLITE_NOMEM : SQLITE_OK;
}

/* Read optional number argument i into *pV, truncated and at most nCap; NULL
** (or absent) leaves *pV.  Returns 0, with the error zErr set on pCtx, when
** it is not a number >= lo. */
static int intArg(const CjkHost *h, sqlite3_context *pCtx, sqlite3_value **apVal, int nVal, int i, double lo,
                  long long nCap, const char *zErr, long long *pV) {
  const unsigned char *zNum;
  int eType;
  double v;
  if (i >= nVal || (eType = h->value_type(apVal[i])) == SQLITE_NULL) return 1;
  if (eType != SQLITE_INTEGER && eType != SQLITE_FLOAT && eType != SQLITE_TEXT) {
    h->result_error(pCtx, zErr, -1);
    return 0;
  }
  zNum = h->value_text(apVal[i]); /* exact for 64-bit integers, unlike value_int */
  if (!zNum) {
    h->result_error_nomem(pCtx);
    return 0;
  }
  {
    /* Text is taken when it is a number and nothing else ('80', as hosts
    ** such as Datasette bind their query parameters), as FTS5's own
    ** snippet() and bm25() take it; 'abc' or '80px' stays an error. */
    char *zEnd = 0;
    v = strtod((const char *)zNum, &zEnd);
    if (eType == SQLITE_TEXT) {
      while (zEnd && (*zEnd == ' ' || *zEnd == '\t')) zEnd++;
      if (zEnd == (char *)zNum || !zEnd || *zEnd || v != v) {
        h->result_error(pCtx, zErr, -1);
        return 0;
      }
    }
  }
  if (!(v >= lo)) {
    h->result_error(pCtx, zErr, -1);
    return 0;
  }
  *pV = v > (double)nCap ? nCap : (long long)v;
  return 1;
}

/* Read an optional text argument; NULL (or absent) means zDefault. */
static void textArg(const CjkHost *h, sqlite3_value **apVal, int nVal, int i,
                    const char *zDefault, const char **pz, int *pn) {
  const unsigned char *z = 0;
  if (i < nVal && h->value_type(apVal[i]) != SQLITE_NULL) {
    z = h->value_text(apVal[i]);
    if (z) {
      *pz = (const char *)z;
      *pn = h->value_bytes(apVal[i]);
      if (*pn < 0) *pn = 0;
      return;
    }
  }
  *pz = zDefault;
  *pn = (int)strlen(zDefault);
}

/* Read the optional layout argument i into pArgs->eLayout: 'object' (or
** NULL, or absent), 'array' or 'fields'.  Returns 0, with an error set on
** pCtx, otherwise. */
static int layoutArg(const CjkHost *h, sqlite3_context *pCtx, sqlite3_value **apVal, int nVal, int i,
                     MatchArgs *pArgs) {
  const char *z = 0;
  int eType = i < nVal ? h->value_type(apVal[i]) : SQLITE_NULL, n = 0;
  if (eType == SQLITE_NULL) return 1;
  if (eType == SQLITE_TEXT) {
    z = (const char *)h->value_text(apVal[i]);
    if (!z) { /* text SQLite could not hand over */
      h->result_error_nomem(pCtx);
      return 0;
    }
    n = h->value_bytes(apVal[i]);
  }
  if (n == 5 && memcmp(z, "array", 5) == 0) {
    pArgs->eLayout = CJK_LAYOUT_ARRAY;
    return 1;
  }
  if (n == 6 && memcmp(z, "fields", 6) == 0) {
    pArgs->eLayout = CJK_LAYOUT_FIELDS;
    return 1;
  }
  if (n == 6 && memcmp(z, "object", 6) == 0) return 1;
  h->result_error(pCtx, "cjk_match: layout must be 'object', 'array' or 'fields'", -1);
  return 0;
}

static void cjkMatchFunc(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx,
                         int nVal, sqlite3_value **apVal) {
  const CjkHost *h = (const CjkHost *)pApi->xUserData(pFts);
  MatchArgs args;
  MatchState s;
  Buf out;
  char zErr[160];
  int rc;

  if (nVal < 1 || nVal > 7) {
    h->result_error(pCtx,
                    "cjk_match: wrong number of arguments; use cjk_match(table, labels "
                    "[, max_chars [, open [, close [, ellipsis [, max_matches [, layout]]]]]])",
                    -1);
    return;
  }
  memset(&args, 0, sizeof(args));
  if (h->value_type(apVal[0]) != SQLITE_NULL) {
    args.zLabels = (const char *)h->value_text(apVal[0]);
    args.nLabels = args.zLabels ? h->value_bytes(apVal[0]) : 0;
    if (args.nLabels < 0) args.nLabels = 0;
  }
  args.nMax = CJK_MATCH_DEFAULT_CHARS;
  args.nListed = CJK_MATCH_MAX_LISTED;
  if (!intArg(h, pCtx, apVal, nVal, 1, 1, INT_MAX / 4, "cjk_match: max_chars must be a positive integer",
              &args.nMax) ||
      !intArg(h, pCtx, apVal, nVal, 5, 0, INT_MAX, "cjk_match: max_matches must be a non-negative integer",
              &args.nListed) ||
      !layoutArg(h, pCtx, apVal, nVal, 6, &args)) {
    return;
  }
  textArg(h, apVal, nVal, 2, CJK_MATCH_DEFAULT_OPEN, &args.zOpen, &args.nOpen);
  textArg(h, apVal, nVal, 3, CJK_MATCH_DEFAULT_CLOSE, &args.zClose, &args.nClose);
  textArg(h, apVal, nVal, 4, CJK_MATCH_DEFAULT_ELLIPSIS, &args.zEllipsis, &args.nEllipsis);

  memset(&s, 0, sizeof(s));
  memset(&out, 0, sizeof(out));
  s.pApi = pApi;
  s.pFts = pFts;
  s.h = h;
  s.tc.text.h = h;
  s.zErr = zErr;
  s.nErr = (int)sizeof(zErr);
  out.h = h;
  zErr[0] = 0;
  /* room for a usual result at once (the snippet's characters take up to
  ** four bytes each), not grown from nothing in several steps per row */
  bufReserve(&out, (size_t)(args.nMax < 4096 ? args.nMax : 4096) * 4 + 512);
  rc = matchRun(&s, &args, &out);
  matchStateFree(&s);
  if (rc == SQLITE_OK && out.n > (size_t)INT_MAX) {
    rc = SQLITE_TOOBIG;
    snprintf(zErr, sizeof(zErr), "cjk_match: result too large");
  }
  if (rc != SQLITE_OK) {
    h->free(out.a);
    if (rc == SQLITE_NOMEM) { /* from us or from FTS5: the host's own out-of-memory error, whatever the phase */
      h->result_error_nomem(pCtx);
    } else {
      if (zErr[0] == 0) snprintf(zErr, sizeof(zErr), "cjk_match: error %d", rc);
      h->result_error(pCtx, zErr, -1);
    }
    return;
  }
  h->result_text(pCtx, out.a, (int)out.n, h->free);
}

static void hostCopyFree(void *p) { ((CjkHost *)p)->free(p); }

int cjk_aux_create(fts5_api *pFts5, const CjkHost *pHost, const char *zName, fts5_extension_function xFunc) {
  CjkHost *p;
  int rc;
  if (!pFts5 || !pHost || !pFts5->xCreateFunction || !pHost->malloc64) return SQLITE_MISUSE;
  p = pHost->malloc64(sizeof(*p));
  if (!p) return SQLITE_NOMEM;
  *p = *pHost;
  rc = pFts5->xCreateFunction(pFts5, zName, (void *)p, xFunc, hostCopyFree);
  if (rc != SQLITE_OK) pHost->free(p); /* FTS5 keeps xDestroy only on success */
  return rc;
}

int cjk_aux_register(fts5_api *pFts5, const CjkHost *pHost) {
  return cjk_aux_create(pFts5, pHost, CJK_MATCH_NAME, cjkMatchFunc);
}
