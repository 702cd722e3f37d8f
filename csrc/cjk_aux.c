/*
** cjk_aux.c — cjk_match(), the reasoning-aware FTS5 auxiliary function.
** The contract (arguments, result, rules) is in cjk_aux.h.
**
** Outline of one call:
**   1. xInst gives every phrase instance (phrase, column, token offset); they
**      decide matched_in and the snippet column.
**   2. The snippet column is re-tokenized (xTokenize, FTS5_TOKENIZE_AUX) and
**      the tokens at the instances' positions kept; each instance becomes a
**      byte range, then a character range.  Ranges are merged.
**   3. One scan of the column converts byte offsets to character offsets;
**      a second decodes only the characters around the chosen window, so memory
**      stays proportional to max_chars and the hit count, not to the column.
**   4. The JSON is written into one buffer handed to SQLite with sqlite3_free().
**
** Invariants: every allocation goes through the host's sqlite3_malloc64,
** sqlite3_realloc64 and sqlite3_free (the registration's copy of them) and is
** checked (an out-of-memory anywhere ends in sqlite3_result_error_nomem); everything allocated is freed on every path;
** we never read z[n] or beyond; output text is valid UTF-8.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cjk_aux.h"
#include "cjk_chars.h"

#ifndef SQLITE_INTEGER
#define SQLITE_INTEGER 1
#endif
#ifndef SQLITE_FLOAT
#define SQLITE_FLOAT 2
#endif

#define CJK_MATCH_DEFAULT_CHARS 200
#define CJK_MATCH_MAX_LISTED 100
#define CJK_MATCH_DEFAULT_OPEN "**"
#define CJK_MATCH_DEFAULT_CLOSE "**"
#define CJK_MATCH_DEFAULT_ELLIPSIS "\xE2\x80\xA6" /* U+2026 */

/* A strictly decoded character that was not valid UTF-8 (printed as U+FFFD). */
#define CJK_BADCHAR 0x110000u

/* The registration's user data: its own copy of the host routines. */
typedef struct CjkAux {
  CjkHost host;
} CjkAux;

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
  memcpy(p->a + p->n, z, n);
  p->n += n;
}

static void bufStr(Buf *p, const char *z) { bufAppend(p, z, strlen(z)); }

static void bufInt(Buf *p, long long v) {
  char aNum[32];
  int n = snprintf(aNum, sizeof(aNum), "%lld", v);
  if (n > 0) bufAppend(p, aNum, (size_t)n);
}

/* ---- strict UTF-8 ------------------------------------------------------ */

/* Decode one character at z[i] (i < n) as Unicode's well-formed UTF-8 table
** defines it.  A malformed sequence yields CJK_BADCHAR for its maximal valid
** prefix (at least one byte), which is how Python's "replace" error handler
** and the W3C encoding standard split invalid input.  Returns the next index. */
static int utf8Strict(const unsigned char *z, int n, int i, unsigned *pCp) {
  unsigned c = z[i], cp, lo = 0x80, hi = 0xBF;
  int nNeed, j, k;
  if (c < 0x80) {
    *pCp = c;
    return i + 1;
  }
  if (c < 0xC2 || c > 0xF4) {
    *pCp = CJK_BADCHAR;
    return i + 1;
  }
  if (c < 0xE0) {
    nNeed = 1;
    cp = c & 0x1F;
  } else if (c < 0xF0) {
    nNeed = 2;
    cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else {
    nNeed = 3;
    cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
  }
  j = i + 1;
  for (k = 0; k < nNeed; k++, j++) {
    unsigned b;
    if (j >= n) {
      *pCp = CJK_BADCHAR;
      return j;
    }
    b = z[j];
    if (b < lo || b > hi) {
      *pCp = CJK_BADCHAR;
      return j;
    }
    cp = (cp << 6) | (b & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  *pCp = cp;
  return j;
}

/* Append z[0..n) as the inside of a JSON string: escaped, and with every
** malformed sequence replaced by U+FFFD. */
static void jsonChars(Buf *p, const unsigned char *z, int n) {
  static const char aHex[] = "0123456789abcdef";
  int i = 0;
  while (i < n && !p->bOom) {
    unsigned c = z[i], cp;
    int j;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      j = i + 1;
      while (j < n && z[j] >= 0x20 && z[j] < 0x80 && z[j] != '"' && z[j] != '\\') j++;
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
    j = utf8Strict(z, n, i, &cp);
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

/* ---- character classes for the window --------------------------------- */

static int isSpaceCp(unsigned cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

/* Characters after which a sentence (or line) ends; '.' is handled apart. */
static int isTermCp(unsigned cp) {
  switch (cp) {
    case '\n': case '\r': case '!': case '?': case ';':
    case 0x2028: case 0x2029: /* line and paragraph separators */
    case 0x3002:              /* 。 */
    case 0xFF01:              /* ！ */
    case 0xFF1F:              /* ？ */
    case 0xFF1B:              /* ； */
    case 0xFF61:              /* ｡ */
      return 1;
    default:
      return 0;
  }
}

/* Part of a word that white space separates (Latin, Cyrillic, digits ...):
** cutting between two of these would cut a word.  CJK letters are not, since
** CJK text has no spaces to cut at. */
static int isWordCp(unsigned cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
           cp == '_';
  }
  if (cp == CJK_BADCHAR || isSpaceCp(cp) || cjk_is_cjk(cp)) return 0;
  if (cp >= 0xFF01 && cp <= 0xFF5E) return isWordCp(cjk_fold_width(cp));
  if (cp >= 0x2000 && cp <= 0x2BFF) return 0; /* punctuation, symbols, arrows ... */
  if (cp >= 0x3000 && cp <= 0x303F) return 0; /* CJK symbols and punctuation */
  if (cp >= 0xFE30 && cp <= 0xFE6F) return 0; /* CJK compatibility / small forms */
  if (cp >= 0xFF00 && cp <= 0xFF65) return 0; /* full/half-width punctuation */
  return cp >= 0xC0;
}

/* ---- re-tokenizing the snippet column ----------------------------------- */

typedef struct TokRec {
  int iPos;          /* token position */
  int iStart, iEnd;  /* byte range in the column text */
  int iText, nText;  /* token text in TokCollect.text */
} TokRec;

typedef struct TokCollect {
  const int *aNeed; /* sorted, distinct positions whose tokens we keep */
  int nNeed;
  int iNeed;        /* first aNeed[] entry not yet passed */
  int iPos;         /* position of the last token seen (-1: none yet) */
  int nByte;        /* length of the column text */
  TokRec *aRec;
  int nRec, nRecAlloc;
  Buf text;         /* token texts */
} TokCollect;

static int collectToken(void *pCtx, int tflags, const char *pToken, int nToken, int iStart,
                        int iEnd) {
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

typedef struct Hit {
  int iPhrase;
  int iStart, iEnd; /* bytes, then (after conversion) characters */
  int iRange;       /* merged highlight it belongs to */
} Hit;

typedef struct Range {
  int iStart, iEnd; /* characters, [iStart, iEnd) */
} Range;

typedef struct OffQuery {
  int iByte;
  int bCeil; /* round up to the next character boundary (range ends) */
  int *pOut;
} OffQuery;

typedef struct MatchArgs {
  const char *zLabels;
  int nLabels;
  long long nMax; /* max_chars */
  const char *zOpen, *zClose, *zEllipsis;
  int nOpen, nClose, nEllipsis;
} MatchArgs;

typedef struct MatchState {
  const CjkHost *h; /* allocator */
  int nCol, nPhrase, nInst;
  int *aInst;          /* nInst * 3: phrase, column, offset */
  unsigned char *aSeen; /* nCol * nPhrase: phrase seen in column */
  int *aDistinct;      /* nCol: distinct phrases seen */
  int *aPhraseSize;    /* nPhrase */
  int *aQtok;          /* index of each phrase's first query token in azQ */
  const char **azQ;    /* query tokens (NULL when unknown) */
  int *anQ;
  int *aNeed;
  int nNeed;
  TokCollect tc;
  Hit *aHit;
  int nHit;
  Range *aRange;
  int nRange;
  OffQuery *aQ;
  unsigned *aCp; /* decoded characters of the region [iRegion, iRegionEnd) */
  int *aOff;     /* their byte offsets, one more than characters */
} MatchState;

static void matchStateFree(MatchState *s) {
  s->h->free(s->aInst);
  s->h->free(s->aSeen);
  s->h->free(s->aDistinct);
  s->h->free(s->aPhraseSize);
  s->h->free(s->aQtok);
  s->h->free(s->azQ);
  s->h->free(s->anQ);
  s->h->free(s->aNeed);
  s->h->free(s->tc.aRec);
  s->h->free(s->tc.text.a);
  s->h->free(s->aHit);
  s->h->free(s->aRange);
  s->h->free(s->aQ);
  s->h->free(s->aCp);
  s->h->free(s->aOff);
}

static void *mallocArray(const CjkHost *h, size_t nElem, size_t szElem) {
  if (nElem == 0) nElem = 1;
  if (nElem > ((size_t)-1) / 2 / szElem) return 0;
  return h->malloc64((sqlite3_uint64)(nElem * szElem));
}

static void *callocArray(const CjkHost *h, size_t nElem, size_t szElem) {
  void *p = mallocArray(h, nElem, szElem);
  if (p) memset(p, 0, (nElem ? nElem : 1) * szElem);
  return p;
}

static int cmpInt(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int cmpHit(const void *a, const void *b) {
  const Hit *x = (const Hit *)a, *y = (const Hit *)b;
  if (x->iStart != y->iStart) return (x->iStart > y->iStart) - (x->iStart < y->iStart);
  if (x->iEnd != y->iEnd) return (x->iEnd > y->iEnd) - (x->iEnd < y->iEnd);
  return (x->iPhrase > y->iPhrase) - (x->iPhrase < y->iPhrase);
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
static void inferQueryToken(MatchState *s, int iCol, int iPhrase, int j) {
  const TokCollect *tc = &s->tc;
  int i, iFirst = -1, lo, hi, r, pass;
  for (i = 0; i < s->nInst; i++) {
    const int *a = &s->aInst[i * 3];
    if (a[1] == iCol && a[0] == iPhrase && a[2] <= INT_MAX - j) {
      iFirst = i;
      break;
    }
  }
  if (iFirst < 0) return;
  tokensAt(tc, s->aInst[iFirst * 3 + 2] + j, &lo, &hi);
  /* pass 0: whole tokens, longest first; pass 1: their first characters */
  for (pass = 0; pass < 2; pass++) {
    const char *zBest = 0;
    int nBest = 0;
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
      if (n <= nBest) continue;
      for (i = iFirst + 1; i < s->nInst && bAll; i++) {
        const int *a = &s->aInst[i * 3];
        if (a[1] != iCol || a[0] != iPhrase || a[2] > INT_MAX - j) continue;
        if (!someTokenStartsWith(tc, a[2] + j, z, n)) bAll = 0;
      }
      if (bAll) {
        zBest = z;
        nBest = n;
      }
    }
    if (zBest) {
      s->azQ[s->aQtok[iPhrase] + j] = zBest;
      s->anQ[s->aQtok[iPhrase] + j] = nBest;
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

/* The window chooser works on the decoded region only; outside it, this
** answers a character that is neither space, word nor terminator. */
typedef struct Region {
  const unsigned *aCp;
  int iFirst, iEnd; /* characters [iFirst, iEnd) are decoded */
  int nChar;        /* characters in the whole column */
} Region;

static unsigned regionCp(const Region *r, long long c) {
  if (c < r->iFirst || c >= r->iEnd) return CJK_BADCHAR;
  return r->aCp[c - r->iFirst];
}

/* Can a snippet start (or end) at character position c? */
static int isBoundary(const Region *r, long long c) {
  unsigned prev;
  if (c <= 0 || c >= r->nChar) return 1;
  prev = regionCp(r, c - 1);
  if (isTermCp(prev)) return 1;
  if (prev == '.') return isSpaceCp(regionCp(r, c));
  return 0;
}

/* Run the whole function, writing the JSON into pOut.  Returns SQLITE_OK, or
** an error code with a message in zErr. */
static int matchRun(const Fts5ExtensionApi *pApi, Fts5Context *pFts, const MatchArgs *pArgs,
                    MatchState *s, Buf *pOut, char *zErr, int nErr) {
  int rc, i, k, iCol = -1;
  const char *zText = 0;
  int nText = 0;
  int nChar = 0, iFirstNonSpace = -1, iLastNonSpaceEnd = 0;
  long long W = pArgs->nMax, first, lastEnd, ws, we;
  int bCutBefore, bCutAfter, iBest = -1;
  Region reg;

  /* 1. instances: matched_in and the snippet column */
  s->nCol = pApi->xColumnCount(pFts);
  s->nPhrase = pApi->xPhraseCount(pFts);
  if (s->nCol < 0) s->nCol = 0;
  if (s->nPhrase < 0) s->nPhrase = 0;
  rc = pApi->xInstCount(pFts, &s->nInst);
  if (rc != SQLITE_OK) {
    snprintf(zErr, (size_t)nErr, "cjk_match: reading the phrase instances failed (error %d)", rc);
    return rc;
  }
  if (s->nInst < 0 || s->nPhrase == 0) s->nInst = 0;
  s->aInst = mallocArray(s->h, (size_t)s->nInst * 3, sizeof(int));
  s->aSeen = callocArray(s->h, (size_t)s->nCol * (size_t)s->nPhrase, 1);
  s->aDistinct = callocArray(s->h, (size_t)s->nCol, sizeof(int));
  s->aPhraseSize = callocArray(s->h, (size_t)s->nPhrase, sizeof(int));
  if (!s->aInst || !s->aSeen || !s->aDistinct || !s->aPhraseSize) return SQLITE_NOMEM;
  for (i = 0; i < s->nPhrase; i++) s->aPhraseSize[i] = pApi->xPhraseSize(pFts, i);
  for (i = 0; i < s->nInst; i++) {
    int *a = &s->aInst[i * 3];
    rc = pApi->xInst(pFts, i, &a[0], &a[1], &a[2]);
    if (rc != SQLITE_OK) {
      snprintf(zErr, (size_t)nErr, "cjk_match: reading phrase instance %d failed (error %d)", i, rc);
      return rc;
    }
    if (a[0] < 0 || a[0] >= s->nPhrase || a[1] < 0 || a[1] >= s->nCol || a[2] < 0) {
      a[1] = -1; /* ignore an instance we cannot place */
      continue;
    }
    if (!s->aSeen[(size_t)a[1] * (size_t)s->nPhrase + (size_t)a[0]]) {
      s->aSeen[(size_t)a[1] * (size_t)s->nPhrase + (size_t)a[0]] = 1;
      s->aDistinct[a[1]]++;
    }
  }
  for (i = 0; i < s->nCol; i++) {
    if (s->aDistinct[i] > 0 && (iCol < 0 || s->aDistinct[i] > s->aDistinct[iCol])) iCol = i;
  }

  bufStr(pOut, "{\"matched_in\":[");
  for (i = 0, k = 0; i < s->nCol; i++) {
    if (s->aDistinct[i] == 0) continue;
    if (k++) bufAppend(pOut, ",", 1);
    jsonLabel(pOut, pArgs, i);
  }
  bufAppend(pOut, "]", 1);

  if (iCol < 0) {
    /* No instance anywhere: the first column with non-space text. */
    for (i = 0; i < s->nCol && iCol < 0; i++) {
      const char *z = 0;
      int n = 0, j = 0;
      rc = pApi->xColumnText(pFts, i, &z, &n);
      if (rc != SQLITE_OK) {
        snprintf(zErr, (size_t)nErr, "cjk_match: reading column %d failed (error %d)", i, rc);
        return rc;
      }
      if (!z) n = 0;
      while (j < n) {
        unsigned cp;
        int jNext = utf8Strict((const unsigned char *)z, n, j, &cp);
        if (!isSpaceCp(cp)) {
          iCol = i;
          break;
        }
        j = jNext;
      }
    }
    if (iCol < 0) iCol = 0;
  }

  if (s->nCol > 0) {
    const char *zLoc = 0;
    int nLoc = 0;
    if (pApi->iVersion >= 4 && pApi->xColumnLocale) {
      rc = pApi->xColumnLocale(pFts, iCol, &zLoc, &nLoc);
      if (rc != SQLITE_OK) {
        zLoc = 0;
        nLoc = 0;
      }
    }
    rc = pApi->xColumnText(pFts, iCol, &zText, &nText);
    if (rc != SQLITE_OK) {
      snprintf(zErr, (size_t)nErr, "cjk_match: reading column %d failed (error %d)", iCol, rc);
      return rc;
    }
    if (!zText || nText < 0) {
      zText = 0;
      nText = 0;
    }

    /* 2. positions the snippet column's instances need, and its tokens there */
    if (s->aDistinct[iCol] > 0 && nText > 0) {
      size_t nNeedAlloc = 0;
      for (i = 0; i < s->nInst; i++) {
        int *a = &s->aInst[i * 3];
        if (a[1] != iCol) continue;
        if (s->aPhraseSize[a[0]] > 0) nNeedAlloc += (size_t)s->aPhraseSize[a[0]];
      }
      if (nNeedAlloc > (size_t)INT_MAX) return SQLITE_NOMEM;
      s->aNeed = mallocArray(s->h, nNeedAlloc, sizeof(int));
      if (!s->aNeed) return SQLITE_NOMEM;
      for (i = 0; i < s->nInst; i++) {
        int *a = &s->aInst[i * 3];
        int j;
        if (a[1] != iCol) continue;
        for (j = 0; j < s->aPhraseSize[a[0]]; j++) {
          if (a[2] > INT_MAX - j) break;
          s->aNeed[s->nNeed++] = a[2] + j;
        }
      }
      qsort(s->aNeed, (size_t)s->nNeed, sizeof(int), cmpInt);
      for (i = 0, k = 0; i < s->nNeed; i++) {
        if (k == 0 || s->aNeed[k - 1] != s->aNeed[i]) s->aNeed[k++] = s->aNeed[i];
      }
      s->nNeed = k;

      /* query tokens, to tell a bigram from the unigram colocated with it */
      {
        size_t nQ = 0;
        for (i = 0; i < s->nPhrase; i++) {
          if (s->aPhraseSize[i] > 0) nQ += (size_t)s->aPhraseSize[i];
        }
        if (nQ > (size_t)INT_MAX) return SQLITE_NOMEM;
        s->aQtok = callocArray(s->h, (size_t)s->nPhrase, sizeof(int));
        s->azQ = (const char **)callocArray(s->h, nQ, sizeof(char *));
        s->anQ = callocArray(s->h, nQ, sizeof(int));
        if (!s->aQtok || !s->azQ || !s->anQ) return SQLITE_NOMEM;
        for (i = 0, k = 0; i < s->nPhrase; i++) {
          int j;
          s->aQtok[i] = k;
          for (j = 0; j < s->aPhraseSize[i]; j++, k++) {
            if (pApi->iVersion >= 3 && pApi->xQueryToken) {
              const char *zTok = 0;
              int nTok = 0;
              if (pApi->xQueryToken(pFts, i, j, &zTok, &nTok) == SQLITE_OK && zTok && nTok > 0) {
                s->azQ[k] = zTok;
                s->anQ[k] = nTok;
              }
            }
          }
        }
      }

      s->tc.aNeed = s->aNeed;
      s->tc.nNeed = s->nNeed;
      s->tc.iPos = -1;
      s->tc.nByte = nText;
      if (s->nNeed > 0) {
        if (pApi->iVersion >= 4 && pApi->xTokenize_v2) {
          rc = pApi->xTokenize_v2(pFts, zText, nText, zLoc, nLoc, (void *)&s->tc, collectToken);
        } else {
          rc = pApi->xTokenize(pFts, zText, nText, (void *)&s->tc, collectToken);
        }
        if (rc == SQLITE_DONE) rc = SQLITE_OK; /* a tokenizer that passes our stop on */
        if (rc != SQLITE_OK) {
          if (rc != SQLITE_NOMEM) {
            snprintf(zErr, (size_t)nErr, "cjk_match: re-tokenizing column %d failed (error %d)",
                     iCol, rc);
          }
          return rc;
        }
      }

      /* hosts without xQueryToken: infer what each query token must be */
      for (i = 0; i < s->nPhrase; i++) {
        int j;
        for (j = 0; j < s->aPhraseSize[i]; j++) {
          if (!s->azQ[s->aQtok[i] + j]) inferQueryToken(s, iCol, i, j);
        }
      }

      /* each instance becomes a byte range */
      s->aHit = mallocArray(s->h, (size_t)s->nInst, sizeof(Hit));
      if (!s->aHit) return SQLITE_NOMEM;
      for (i = 0; i < s->nInst; i++) {
        int *a = &s->aInst[i * 3];
        int j, iStart = INT_MAX, iEnd = -1;
        if (a[1] != iCol) continue;
        for (j = 0; j < s->aPhraseSize[a[0]]; j++) {
          int lo, rEnd, r, bExact = 0, bPrefix = 0;
          const char *zQ = s->azQ[s->aQtok[a[0]] + j];
          int nQ = s->anQ[s->aQtok[a[0]] + j];
          if (a[2] > INT_MAX - j) break;
          tokensAt(&s->tc, a[2] + j, &lo, &rEnd);
          if (lo == rEnd) continue;
          if (zQ) {
            for (r = lo; r < rEnd; r++) {
              const TokRec *t = &s->tc.aRec[r];
              const char *zT = s->tc.text.a + t->iText;
              if (t->nText == nQ && memcmp(zT, zQ, (size_t)nQ) == 0) bExact = 1;
              if (t->nText > nQ && memcmp(zT, zQ, (size_t)nQ) == 0) bPrefix = 1;
            }
          }
          for (r = lo; r < rEnd; r++) {
            const TokRec *t = &s->tc.aRec[r];
            int tEnd = t->iEnd;
            if (bExact || bPrefix) {
              const char *zT = s->tc.text.a + t->iText;
              if (t->nText < nQ || memcmp(zT, zQ, (size_t)nQ) != 0) continue;
              if (t->nText > nQ) {
                /* A prefix match.  Only the last token of a phrase can be a
                ** prefix; there it counts even beside an exact match, since
                ** "山"* matches both tokens of a run ending 山山 (bigram 山山
                ** and the unigram 山 colocated with it). */
                if (bExact && j != s->aPhraseSize[a[0]] - 1) continue;
                tEnd = cjkPrefixEnd((const unsigned char *)zText, t->iStart, t->iEnd,
                                    tokenChars(zQ, nQ));
              }
            }
            if (t->iStart < iStart) iStart = t->iStart;
            if (tEnd > iEnd) iEnd = tEnd;
          }
        }
        if (iEnd < 0 || iStart > iEnd) continue;
        s->aHit[s->nHit].iPhrase = a[0];
        s->aHit[s->nHit].iStart = iStart;
        s->aHit[s->nHit].iEnd = iEnd;
        s->aHit[s->nHit].iRange = -1;
        s->nHit++;
      }
      qsort(s->aHit, (size_t)s->nHit, sizeof(Hit), cmpHit);
    }
  }

  /* 3a. byte offsets -> character offsets, in one scan of the column */
  {
    int nQ = s->nHit * 2, iq = 0, u = 0, b = 0;
    if (nQ > 0) {
      s->aQ = mallocArray(s->h, (size_t)nQ, sizeof(OffQuery));
      if (!s->aQ) return SQLITE_NOMEM;
      for (i = 0; i < s->nHit; i++) {
        s->aQ[2 * i].iByte = s->aHit[i].iStart;
        s->aQ[2 * i].bCeil = 0;
        s->aQ[2 * i].pOut = &s->aHit[i].iStart;
        s->aQ[2 * i + 1].iByte = s->aHit[i].iEnd;
        s->aQ[2 * i + 1].bCeil = 1;
        s->aQ[2 * i + 1].pOut = &s->aHit[i].iEnd;
      }
      qsort(s->aQ, (size_t)nQ, sizeof(OffQuery), cmpOffQuery);
    }
    while (b < nText) {
      unsigned cp;
      int bNext = utf8Strict((const unsigned char *)zText, nText, b, &cp);
      while (iq < nQ && s->aQ[iq].iByte < bNext) {
        *s->aQ[iq].pOut = (s->aQ[iq].iByte <= b || !s->aQ[iq].bCeil) ? u : u + 1;
        iq++;
      }
      if (!isSpaceCp(cp)) {
        if (iFirstNonSpace < 0) iFirstNonSpace = u;
        iLastNonSpaceEnd = u + 1;
      }
      u++;
      b = bNext;
    }
    for (; iq < nQ; iq++) *s->aQ[iq].pOut = u;
    nChar = u;
    if (iFirstNonSpace < 0) iFirstNonSpace = nChar;
  }

  /* merge overlapping or touching highlights (in characters) */
  if (s->nHit > 0) {
    qsort(s->aHit, (size_t)s->nHit, sizeof(Hit), cmpHit);
    s->aRange = mallocArray(s->h, (size_t)s->nHit, sizeof(Range));
    if (!s->aRange) return SQLITE_NOMEM;
    for (i = 0; i < s->nHit; i++) {
      Hit *h = &s->aHit[i];
      if (h->iEnd < h->iStart) h->iEnd = h->iStart;
      if (s->nRange > 0 && h->iStart <= s->aRange[s->nRange - 1].iEnd) {
        if (h->iEnd > s->aRange[s->nRange - 1].iEnd) s->aRange[s->nRange - 1].iEnd = h->iEnd;
      } else {
        s->aRange[s->nRange].iStart = h->iStart;
        s->aRange[s->nRange].iEnd = h->iEnd;
        s->nRange++;
      }
      h->iRange = s->nRange - 1;
    }
  }

  /* 3b. the best window: most distinct phrases, then most instances */
  if (s->nHit > 0) {
    int *aCnt = callocArray(s->h, (size_t)s->nPhrase, sizeof(int));
    int j = 0, nDistinct = 0, iBestEnd = 0;
    long long bestScore = -1;
    if (!aCnt) return SQLITE_NOMEM;
    for (i = 0; i < s->nHit; i++) {
      long long score;
      if (j < i) j = i;
      while (j < s->nHit && (long long)s->aHit[j].iStart < (long long)s->aHit[i].iStart + W) {
        if (aCnt[s->aHit[j].iPhrase]++ == 0) nDistinct++;
        j++;
      }
      score = (long long)nDistinct * ((long long)s->nHit + 1) + (j - i);
      if (score > bestScore) {
        bestScore = score;
        iBest = i;
        iBestEnd = j;
      }
      if (--aCnt[s->aHit[i].iPhrase] == 0) nDistinct--;
    }
    s->h->free(aCnt);
    first = s->aRange[s->aHit[iBest].iRange].iStart;
    lastEnd = first;
    for (i = iBest; i < iBestEnd; i++) {
      long long e = s->aRange[s->aHit[i].iRange].iEnd;
      if (e > lastEnd) lastEnd = e;
    }
    if (lastEnd > first + W) lastEnd = first + W;
  } else {
    first = lastEnd = iFirstNonSpace;
  }

  /* 3c. decode the characters around the window */
  {
    long long rs = first - W, re = first + W + 2;
    int u = 0, b = 0, c;
    if (rs < 0) rs = 0;
    if (re > nChar) re = nChar;
    if (re < rs) re = rs;
    s->aCp = mallocArray(s->h, (size_t)(re - rs), sizeof(unsigned));
    s->aOff = mallocArray(s->h, (size_t)(re - rs) + 1, sizeof(int));
    if (!s->aCp || !s->aOff) return SQLITE_NOMEM;
    c = 0;
    while (b < nText && u < re) {
      unsigned cp;
      int bNext = utf8Strict((const unsigned char *)zText, nText, b, &cp);
      if (u >= rs) {
        s->aCp[c] = cp;
        s->aOff[c] = b;
        c++;
      }
      u++;
      b = bNext;
    }
    s->aOff[c] = b;
    reg.aCp = s->aCp;
    reg.iFirst = (int)rs;
    reg.iEnd = (int)rs + c;
    reg.nChar = nChar;
  }

  /* 3d. window edges */
  {
    long long slack = W - (lastEnd - first), target, lo, c, bestDist = -1;
    if (slack < 0) slack = 0;
    target = first - slack / 2;
    if (iLastNonSpaceEnd - iFirstNonSpace <= W) {
      ws = iFirstNonSpace; /* the whole text fits */
    } else {
      lo = lastEnd - (3 * W) / 4;
      if (lo < 0) lo = 0;
      ws = -1;
      for (c = first; c >= lo; c--) {
        long long dist;
        if (!isBoundary(&reg, c)) continue;
        dist = c > target ? c - target : target - c;
        if (bestDist < 0 || dist <= bestDist) {
          bestDist = dist;
          ws = c;
        }
      }
      if (ws < 0) {
        ws = target < 0 ? 0 : target;
        if (ws > 0 && isWordCp(regionCp(&reg, ws - 1)) && isWordCp(regionCp(&reg, ws))) {
          for (c = ws + 1; c <= first; c++) {
            if (isSpaceCp(regionCp(&reg, c - 1))) {
              ws = c;
              break;
            }
          }
        }
      }
    }
    while (ws < first && isSpaceCp(regionCp(&reg, ws))) ws++;
    we = ws + W;
    if (we > nChar) we = nChar;
    if (we < lastEnd) we = lastEnd;
    if (we < iLastNonSpaceEnd) {
      long long minEnd = ws + W / 2;
      int bFound = 0;
      if (minEnd < lastEnd) minEnd = lastEnd;
      for (c = we; c >= minEnd && c > ws; c--) {
        if (isBoundary(&reg, c)) {
          we = c;
          bFound = 1;
          break;
        }
      }
      if (!bFound && isWordCp(regionCp(&reg, we - 1)) && isWordCp(regionCp(&reg, we))) {
        for (c = we - 1; c >= minEnd && c > ws; c--) {
          if (isSpaceCp(regionCp(&reg, c))) {
            we = c;
            break;
          }
        }
      }
    }
    while (we > ws && we > lastEnd && isSpaceCp(regionCp(&reg, we - 1))) we--;
    /* Characters the end gave back go to the start: to the earliest sentence
    ** start still in budget, or (when the start is not one already) as far as
    ** the budget goes without cutting a word. */
    if (we - ws < W && ws > iFirstNonSpace) {
      long long lo2 = we - W, c2 = -1;
      if (lo2 < 0) lo2 = 0;
      if (lo2 < reg.iFirst) lo2 = reg.iFirst;
      for (c = lo2; c < ws; c++) {
        if (isBoundary(&reg, c)) {
          c2 = c;
          break;
        }
      }
      if (c2 < 0 && !isBoundary(&reg, ws) && lo2 < ws) {
        c2 = lo2;
        if (c2 > 0 && isWordCp(regionCp(&reg, c2 - 1)) && isWordCp(regionCp(&reg, c2))) {
          for (c = c2 + 1; c <= ws; c++) {
            if (isSpaceCp(regionCp(&reg, c - 1))) break;
          }
          c2 = c > ws ? ws : c;
        }
      }
      if (c2 >= 0 && c2 < ws) {
        ws = c2;
        while (ws < first && isSpaceCp(regionCp(&reg, ws))) ws++;
      }
    }
    if (ws < reg.iFirst) ws = reg.iFirst;
    if (we > reg.iEnd) we = reg.iEnd;
    if (we < ws) we = ws;
    bCutBefore = ws > iFirstNonSpace;
    bCutAfter = we < iLastNonSpaceEnd;
  }

  /* 4. the rest of the JSON */
  bufStr(pOut, ",\"column\":");
  if (s->nCol > 0) {
    jsonLabel(pOut, pArgs, iCol);
  } else {
    bufStr(pOut, "null");
  }
  bufStr(pOut, ",\"snippet\":\"");
  {
    const unsigned char *z = (const unsigned char *)zText;
    int r = 0, iFirstShown = -1;
    long long c = ws;
#define OFF(ch) (s->aOff[(ch) - reg.iFirst])
    if (bCutBefore) jsonChars(pOut, (const unsigned char *)pArgs->zEllipsis, pArgs->nEllipsis);
    while (r < s->nRange && s->aRange[r].iEnd <= ws) r++;
    while (c < we) {
      if (r < s->nRange && s->aRange[r].iStart <= c) {
        long long e = s->aRange[r].iEnd < we ? s->aRange[r].iEnd : we;
        if (iFirstShown < 0) iFirstShown = r;
        jsonChars(pOut, (const unsigned char *)pArgs->zOpen, pArgs->nOpen);
        jsonChars(pOut, z + OFF(c), OFF(e) - OFF(c));
        jsonChars(pOut, (const unsigned char *)pArgs->zClose, pArgs->nClose);
        c = e;
        r++;
      } else {
        long long e = (r < s->nRange && s->aRange[r].iStart < we) ? s->aRange[r].iStart : we;
        jsonChars(pOut, z + OFF(c), OFF(e) - OFF(c));
        c = e;
      }
    }
#undef OFF
    if (bCutAfter) jsonChars(pOut, (const unsigned char *)pArgs->zEllipsis, pArgs->nEllipsis);
    bufStr(pOut, "\",\"start\":");
    if (iFirstShown >= 0) {
      bufInt(pOut, s->aRange[iFirstShown].iStart);
      bufStr(pOut, ",\"end\":");
      bufInt(pOut, s->aRange[iFirstShown].iEnd);
    } else {
      bufStr(pOut, "null,\"end\":null");
    }
  }
  bufStr(pOut, ",\"window\":[");
  bufInt(pOut, ws);
  bufAppend(pOut, ",", 1);
  bufInt(pOut, we);
  bufStr(pOut, "],\"matches\":[");
  for (i = 0; i < s->nRange && i < CJK_MATCH_MAX_LISTED; i++) {
    if (i) bufAppend(pOut, ",", 1);
    bufAppend(pOut, "[", 1);
    bufInt(pOut, s->aRange[i].iStart);
    bufAppend(pOut, ",", 1);
    bufInt(pOut, s->aRange[i].iEnd);
    bufAppend(pOut, "]", 1);
  }
  bufStr(pOut, "],\"match_count\":");
  bufInt(pOut, s->nRange);
  bufAppend(pOut, "}", 1);
  return pOut->bOom ? SQLITE_NOMEM : SQLITE_OK;
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

static void cjkMatchFunc(const Fts5ExtensionApi *pApi, Fts5Context *pFts, sqlite3_context *pCtx,
                         int nVal, sqlite3_value **apVal) {
  const CjkAux *pAux = (const CjkAux *)pApi->xUserData(pFts);
  const CjkHost *h = &pAux->host;
  MatchArgs args;
  MatchState s;
  Buf out;
  char zErr[160];
  int rc;

  if (nVal < 1 || nVal > 5) {
    h->result_error(pCtx,
                    "cjk_match: wrong number of arguments; use cjk_match(table, labels "
                    "[, max_chars [, open [, close [, ellipsis]]]])",
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
  if (nVal >= 2 && h->value_type(apVal[1]) != SQLITE_NULL) {
    int eType = h->value_type(apVal[1]);
    const unsigned char *zNum;
    double v;
    if (eType != SQLITE_INTEGER && eType != SQLITE_FLOAT) {
      h->result_error(pCtx, "cjk_match: max_chars must be a positive integer", -1);
      return;
    }
    zNum = h->value_text(apVal[1]); /* exact for 64-bit integers, unlike value_int */
    if (!zNum) {
      h->result_error_nomem(pCtx);
      return;
    }
    v = strtod((const char *)zNum, 0);
    if (!(v >= 1)) {
      h->result_error(pCtx, "cjk_match: max_chars must be a positive integer", -1);
      return;
    }
    args.nMax = v > (double)(INT_MAX / 4) ? INT_MAX / 4 : (long long)v;
  }
  textArg(h, apVal, nVal, 2, CJK_MATCH_DEFAULT_OPEN, &args.zOpen, &args.nOpen);
  textArg(h, apVal, nVal, 3, CJK_MATCH_DEFAULT_CLOSE, &args.zClose, &args.nClose);
  textArg(h, apVal, nVal, 4, CJK_MATCH_DEFAULT_ELLIPSIS, &args.zEllipsis, &args.nEllipsis);

  memset(&s, 0, sizeof(s));
  memset(&out, 0, sizeof(out));
  s.h = h;
  s.tc.text.h = h;
  out.h = h;
  zErr[0] = 0;
  rc = matchRun(pApi, pFts, &args, &s, &out, zErr, (int)sizeof(zErr));
  matchStateFree(&s);
  if (rc == SQLITE_OK && out.n > (size_t)INT_MAX) {
    rc = SQLITE_TOOBIG;
    snprintf(zErr, sizeof(zErr), "cjk_match: result too large");
  }
  if (rc != SQLITE_OK) {
    h->free(out.a);
    if (rc == SQLITE_NOMEM && zErr[0] == 0) {
      h->result_error_nomem(pCtx);
    } else {
      if (zErr[0] == 0) snprintf(zErr, sizeof(zErr), "cjk_match: error %d", rc);
      h->result_error(pCtx, zErr, -1);
    }
    return;
  }
  h->result_text(pCtx, out.a, (int)out.n, h->free);
}

static void cjkAuxDestroy(void *p) { ((CjkAux *)p)->host.free(p); }

int cjk_aux_register(fts5_api *pFts5, const CjkHost *pHost) {
  CjkAux *p;
  int rc;
  if (!pFts5 || !pHost || !pFts5->xCreateFunction || !pHost->malloc64) return SQLITE_MISUSE;
  p = pHost->malloc64(sizeof(*p));
  if (!p) return SQLITE_NOMEM;
  p->host = *pHost;
  rc = pFts5->xCreateFunction(pFts5, CJK_MATCH_NAME, (void *)p, cjkMatchFunc, cjkAuxDestroy);
  if (rc != SQLITE_OK) pHost->free(p); /* FTS5 keeps xDestroy only on success */
  return rc;
}
