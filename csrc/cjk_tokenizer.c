/*
** cjk_tokenizer.c — cjk_unicode61: unicode61 outside CJK, overlapping bigrams
** inside.  See cjk_tokenizer.h for the semantics.
**
** Invariants:
**   - Every offset passed to xToken satisfies 0 <= iStart <= iEnd <= nText and
**     lies on a character boundary as cjk_utf8_next() reads the input.
**   - We never read pText[nText] or beyond; nText < 0 is treated as 0.
**   - No mutable state outside the Fts5Tokenizer and the per-call TokState, so
**     tokenizing is thread-safe as far as the wrapped unicode61 is.
**   - The first non-OK code returned by xToken (SQLITE_DONE included) stops
**     tokenizing and is returned as is.
*/
#include <stdlib.h>
#include <string.h>

#include "cjk_chars.h"
#include "cjk_tokenizer.h"
#include "cjk_variants.h"

typedef struct CjkTokenizer {
  int bV2;                     /* unicode61 reached through fts5_tokenizer_v2 */
  fts5_tokenizer inner1;       /* its methods when bV2 == 0 */
  fts5_tokenizer_v2 *pInner2;  /* its methods when bV2 == 1 (owned by FTS5) */
  Fts5Tokenizer *pInner;       /* the unicode61 instance */
  int nSep;                    /* CJK code points named in separators= ... */
  unsigned *aSep;              /* ... which then split CJK runs */
  int bSplitNewline;           /* '\n' is a separator: long segments may split there */
  int bFoldVariants;           /* fold_variants 1: Han variants fold (cjk_variants.h) */
} CjkTokenizer;

/* Per-call state shared with the callback that forwards unicode61's tokens. */
typedef struct TokState {
  void *pCtx;
  cjk_xtoken_fn xToken;
  int rc;          /* first non-OK code from xToken */
  int iBase;       /* offset of the segment being handed to unicode61 */
  const int *aMap; /* folded-segment offset -> segment offset, or NULL */
  int nMap;        /* entries in aMap minus one (folded length) */
  int bAfterCjk;   /* the last token emitted came from a CJK run */
  int iRunEnd;     /* end offset of the last CJK run */
  unsigned lastCp; /* its last character, folded */
} TokState;

/* Segments of non-CJK text longer than this are handed to unicode61 in pieces
** split at a newline, so folding never copies more than about this much. */
#define CJK_CHUNK 65536

/* ---- arguments --------------------------------------------------------- */

static const char *const azCategory[] = {
    "Cc", "Cf", "Cn", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu", "Mc", "Me", "Mn", "Nd", "Nl", "No",
    "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm", "So", "Zl", "Zp", "Zs", "C*", "L*",
    "M*", "N*", "P*", "S*", "Z*"};

static void setErr(char *zErr, int nErr, const char *zMsg, const char *zArg) {
  int i = 0;
  const char *z;
  if (nErr <= 0) return;
  for (z = zMsg; *z && i < nErr - 1; z++) {
    if (z[0] == '%' && z[1] == 's') {
      const char *a;
      for (a = zArg; a && *a && i < nErr - 1; a++) zErr[i++] = *a;
      z++;
    } else {
      zErr[i++] = *z;
    }
  }
  zErr[i] = 0;
}

/* Option names compare like unicode61's: ASCII case-insensitive. */
static int optionIs(const char *zName, const char *zOption) {
  for (; *zName && *zOption; zName++, zOption++) {
    char a = *zName, b = *zOption;
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return *zName == 0 && *zOption == 0;
}

static int checkCategories(const char *z, char *zErr, int nErr) {
  while (*z) {
    const char *zStart;
    size_t n, k;
    int ok = 0;
    while (*z == ' ' || *z == '\t') z++;
    zStart = z;
    while (*z && *z != ' ' && *z != '\t') z++;
    n = (size_t)(z - zStart);
    if (n == 0) continue;
    for (k = 0; k < sizeof(azCategory) / sizeof(azCategory[0]); k++) {
      if (n == 2 && memcmp(zStart, azCategory[k], 2) == 0) ok = 1;
    }
    if (!ok) {
      char aBad[32];
      size_t m = n < sizeof(aBad) - 1 ? n : sizeof(aBad) - 1;
      memcpy(aBad, zStart, m);
      aBad[m] = 0;
      setErr(zErr, nErr,
             "cjk_unicode61: unknown Unicode category '%s' in categories "
             "(use codes such as Lu, Nd, Co or wildcards such as L*)",
             aBad);
      return 1;
    }
  }
  return 0;
}

int cjk_check_args(const char **azArg, int nArg, char *zErr, int nErr) {
  int i;
  if (nErr > 0) zErr[0] = 0;
  if (nArg < 0 || (nArg > 0 && !azArg)) {
    setErr(zErr, nErr, "cjk_unicode61: bad argument list", 0);
    return 1;
  }
  for (i = 0; i < nArg; i += 2) {
    const char *zName = azArg[i];
    const char *zVal = i + 1 < nArg ? azArg[i + 1] : 0;
    if (!zName) zName = "";
    if (!zVal) {
      setErr(zErr, nErr, "cjk_unicode61: option '%s' needs a value (options come in name value pairs)",
             zName);
      return 1;
    }
    if (optionIs(zName, "remove_diacritics")) {
      if (!((zVal[0] == '0' || zVal[0] == '1' || zVal[0] == '2') && zVal[1] == 0)) {
        setErr(zErr, nErr, "cjk_unicode61: remove_diacritics must be 0, 1 or 2, not '%s'", zVal);
        return 1;
      }
    } else if (optionIs(zName, "categories")) {
      if (checkCategories(zVal, zErr, nErr)) return 1;
    } else if (optionIs(zName, "fold_variants")) {
      if (!((zVal[0] == '0' || zVal[0] == '1') && zVal[1] == 0)) {
        setErr(zErr, nErr, "cjk_unicode61: fold_variants must be 0 or 1, not '%s'", zVal);
        return 1;
      }
    } else if (!optionIs(zName, "tokenchars") && !optionIs(zName, "separators")) {
      setErr(zErr, nErr,
             "cjk_unicode61: unknown option '%s' (known: remove_diacritics, tokenchars, "
             "separators, categories, fold_variants)",
             zName);
      return 1;
    }
  }
  return 0;
}

/* Collect the CJK letters named in every separators= option. */
static int collectSeparators(CjkTokenizer *p, const char **azArg, int nArg) {
  int i;
  for (i = 0; i + 1 < nArg; i += 2) {
    const unsigned char *z;
    int n, k;
    if (!optionIs(azArg[i], "separators")) continue;
    z = (const unsigned char *)azArg[i + 1];
    n = (int)strlen((const char *)z);
    for (k = 0; k < n;) {
      unsigned cp;
      k = cjk_utf8_next(z, n, k, &cp);
      if (cjk_is_cjk(cp)) {
        unsigned *aNew = realloc(p->aSep, sizeof(unsigned) * (size_t)(p->nSep + 1));
        if (!aNew) return SQLITE_NOMEM;
        p->aSep = aNew;
        p->aSep[p->nSep++] = cp;
      }
    }
  }
  return SQLITE_OK;
}

/* Our own options are not unicode61's: take fold_variants out of the list
** unicode61 gets.  *pazInner is azArg itself when there is nothing to take
** out, else a copy the caller frees. */
static int splitOwnOptions(CjkTokenizer *p, const char **azArg, int nArg, const char ***pazInner,
                           int *pnInner) {
  int i, n = 0, bOwn = 0;
  const char **aInner;
  for (i = 0; i + 1 < nArg; i += 2) {
    if (optionIs(azArg[i], "fold_variants")) {
      p->bFoldVariants = azArg[i + 1][0] == '1';
      bOwn = 1;
    }
  }
  *pazInner = azArg;
  *pnInner = nArg;
  if (!bOwn) return SQLITE_OK;
  aInner = malloc(sizeof(const char *) * (size_t)nArg);
  if (!aInner) return SQLITE_NOMEM;
  for (i = 0; i + 1 < nArg; i += 2) {
    if (optionIs(azArg[i], "fold_variants")) continue;
    aInner[n++] = azArg[i];
    aInner[n++] = azArg[i + 1];
  }
  *pazInner = aInner;
  *pnInner = n;
  return SQLITE_OK;
}

/* ---- create / delete --------------------------------------------------- */

void cjk_tokenizer_delete(Fts5Tokenizer *pTok) {
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  if (!p) return;
  if (p->pInner) {
    if (p->bV2) {
      p->pInner2->xDelete(p->pInner);
    } else {
      p->inner1.xDelete(p->pInner);
    }
  }
  free(p->aSep);
  free(p);
}

/* Long non-CJK segments may be handed to unicode61 in pieces split after a
** newline, but only if a newline separates tokens under these arguments
** (tokenchars or categories can make it a token character).  Ask unicode61
** itself: "a\nb" must come back as the two tokens "a" and "b". */
typedef struct NewlineProbe {
  int nTok;
  int bSplit;
} NewlineProbe;

static int probeToken(void *pCtx, int tflags, const char *pTok, int nTok, int iStart, int iEnd) {
  NewlineProbe *q = (NewlineProbe *)pCtx;
  (void)tflags;
  (void)pTok;
  (void)nTok;
  q->nTok++;
  if (q->nTok == 1 && iStart == 0 && iEnd == 1) q->bSplit = 1;
  if (q->nTok > 1 && iStart != 2) q->bSplit = 0;
  return SQLITE_OK;
}

static int probeNewline(CjkTokenizer *p) {
  NewlineProbe q = {0, 0};
  int rc;
  if (p->bV2) {
    rc = p->pInner2->xTokenize(p->pInner, &q, FTS5_TOKENIZE_DOCUMENT, "a\nb", 3, 0, 0, probeToken);
  } else {
    rc = p->inner1.xTokenize(p->pInner, &q, FTS5_TOKENIZE_DOCUMENT, "a\nb", 3, probeToken);
  }
  p->bSplitNewline = rc == SQLITE_OK && q.bSplit && q.nTok == 2;
  return rc;
}

int cjk_tokenizer_create(fts5_api *pApi, const char **azArg, int nArg, Fts5Tokenizer **ppOut) {
  CjkTokenizer *p;
  void *pUd = 0;
  const char **azInner = 0;
  int rc, nInner = 0;
  char zErr[8];
  *ppOut = 0;
  if (!pApi) return SQLITE_ERROR;
  if (cjk_check_args(azArg, nArg, zErr, (int)sizeof(zErr))) return SQLITE_ERROR;
  p = calloc(1, sizeof(*p));
  if (!p) return SQLITE_NOMEM;
  rc = splitOwnOptions(p, azArg, nArg, &azInner, &nInner);
  if (rc != SQLITE_OK) {
    free(p);
    return rc;
  }
  if (pApi->iVersion >= 3) {
    p->bV2 = 1;
    rc = pApi->xFindTokenizer_v2(pApi, "unicode61", &pUd, &p->pInner2);
    if (rc == SQLITE_OK && !p->pInner2) rc = SQLITE_ERROR;
    if (rc == SQLITE_OK) rc = p->pInner2->xCreate(pUd, azInner, nInner, &p->pInner);
  } else {
    rc = pApi->xFindTokenizer(pApi, "unicode61", &pUd, &p->inner1);
    if (rc == SQLITE_OK) rc = p->inner1.xCreate(pUd, azInner, nInner, &p->pInner);
  }
  if (azInner != azArg) free((void *)azInner);
  if (rc == SQLITE_OK) rc = collectSeparators(p, azArg, nArg);
  if (rc == SQLITE_OK) rc = probeNewline(p);
  if (rc != SQLITE_OK) {
    cjk_tokenizer_delete((Fts5Tokenizer *)p);
    return rc;
  }
  *ppOut = (Fts5Tokenizer *)p;
  return SQLITE_OK;
}

int cjk_xCreate(void *pUserData, const char **azArg, int nArg, Fts5Tokenizer **ppOut) {
  return cjk_tokenizer_create((fts5_api *)pUserData, azArg, nArg, ppOut);
}

/* ---- tokenize ---------------------------------------------------------- */

static int isCjkLetter(const CjkTokenizer *p, unsigned cp) {
  int i;
  if (!cjk_is_cjk(cp)) return 0;
  if (p->nSep == 0) return 1;
  for (i = 0; i < p->nSep; i++) {
    if (p->aSep[i] == cp) return 0;
  }
  return 1;
}

static int emit(TokState *s, int tflags, const char *pTok, int nTok, int iStart, int iEnd) {
  int rc = s->xToken(s->pCtx, tflags, pTok, nTok, iStart, iEnd);
  if (rc != SQLITE_OK && s->rc == SQLITE_OK) s->rc = rc;
  return rc;
}

/* xToken for the wrapped unicode61: map offsets back to the input. */
static int forwardToken(void *pCtx, int tflags, const char *pTok, int nTok, int iStart, int iEnd) {
  TokState *s = (TokState *)pCtx;
  if (s->rc != SQLITE_OK) return s->rc;
  if (iStart < 0) iStart = 0;
  if (iEnd < iStart) iEnd = iStart;
  if (s->aMap) {
    if (iEnd > s->nMap) iEnd = s->nMap;
    if (iStart > iEnd) iStart = iEnd;
    iStart = s->aMap[iStart];
    iEnd = s->aMap[iEnd];
  }
  s->bAfterCjk = 0;
  return emit(s, tflags, pTok, nTok, s->iBase + iStart, s->iBase + iEnd);
}

static int innerTokenize(CjkTokenizer *p, TokState *s, int flags, const char *z, int n,
                         const char *pLocale, int nLocale) {
  int rc;
  if (p->bV2) {
    rc = p->pInner2->xTokenize(p->pInner, (void *)s, flags, z, n, pLocale, nLocale, forwardToken);
  } else {
    rc = p->inner1.xTokenize(p->pInner, (void *)s, flags, z, n, forwardToken);
  }
  if (s->rc != SQLITE_OK) return s->rc; /* xToken's code wins, SQLITE_DONE included */
  return rc;
}

/* Hand non-CJK text z[0..n) (at offset iBase of the input) to unicode61,
** folding full-width ASCII first when bFold is set. */
static int tokenizeSegment(CjkTokenizer *p, TokState *s, int flags, const unsigned char *z, int n,
                           int iBase, int bFold, const char *pLocale, int nLocale) {
  unsigned char *aOut;
  int *aMap;
  int i = 0, o = 0, rc;
  s->iBase = iBase;
  s->aMap = 0;
  if (!bFold) return innerTokenize(p, s, flags, (const char *)z, n, pLocale, nLocale);
  aOut = malloc((size_t)n + 1);
  aMap = malloc(sizeof(int) * ((size_t)n + 1));
  if (!aOut || !aMap) {
    free(aOut);
    free(aMap);
    return SQLITE_NOMEM;
  }
  while (i < n) {
    unsigned cp;
    int j = cjk_utf8_next(z, n, i, &cp);
    if (cp >= 0xFF01 && cp <= 0xFF5E) {
      aMap[o] = i;
      aOut[o++] = (unsigned char)cjk_fold_width(cp);
    } else {
      int k;
      for (k = i; k < j; k++) {
        aMap[o] = i; /* bytes inside a character map to its start */
        aOut[o++] = z[k];
      }
    }
    i = j;
  }
  aMap[o] = n;
  s->aMap = aMap;
  s->nMap = o;
  rc = innerTokenize(p, s, flags, (const char *)aOut, o, pLocale, nLocale);
  s->aMap = 0;
  free(aOut);
  free(aMap);
  return rc;
}

/* Read one CJK letter at z[*pi], folded and composed with a following voiced
** mark.  Returns 0 (and leaves *pi) if z[*pi] does not start a CJK letter.
** Variation selectors after it are part of it (skipped, so *pi moves past
** them), and under fold_variants 1 it takes its canonical Han form. */
static int readCjk(const CjkTokenizer *p, const unsigned char *z, int n, int *pi, unsigned *pCp) {
  unsigned cp, cp2, c;
  int i = *pi, j, j2;
  if (i >= n || z[i] < 0x80) return 0;
  j = cjk_utf8_next(z, n, i, &cp);
  if (!isCjkLetter(p, cp)) return 0;
  cp = cjk_fold_width(cp);
  /* Look ahead only at a voiced sound mark: U+3099/309A (E3 82 99/9A) or
  ** half-width U+FF9E/FF9F (EF BE 9E/9F). */
  if (j + 2 < n && ((z[j] == 0xE3 && z[j + 1] == 0x82 && (z[j + 2] == 0x99 || z[j + 2] == 0x9A)) ||
                    (z[j] == 0xEF && z[j + 1] == 0xBE && (z[j + 2] == 0x9E || z[j + 2] == 0x9F)))) {
    j2 = cjk_utf8_next(z, n, j, &cp2);
    if (isCjkLetter(p, cp2) && (c = cjk_compose_voiced(cp, cjk_fold_width(cp2))) != 0) {
      cp = c;
      j = j2;
    }
  }
  j = cjk_skip_variation_selectors(z, n, j);
  if (p->bFoldVariants) cp = cjk_fold_variant(cp);
  *pCp = cp;
  *pi = j;
  return 1;
}

/* Emit the bigrams (and run-final unigram) of the CJK run starting at *pi. */
static int tokenizeCjkRun(const CjkTokenizer *p, TokState *s, int flags, const unsigned char *z,
                          int n, int *pi) {
  char aTok[8];
  unsigned cp, prevCp = 0;
  int i = *pi, iPrev = i, nChar = 0, nPrev = 0, rc;
  for (;;) {
    int iStart = i;
    if (!readCjk(p, z, n, &i, &cp)) break;
    if (nChar == 0 && s->bAfterCjk && cp == s->lastCp) {
      /* Only separators since the last run, and this run starts with the
      ** character that one ended with: without a gap, that run's last bigram
      ** (x,y) and this run's first (y,z) would be adjacent and the phrase xyz
      ** would match across the break.  Runs that don't share that character
      ** can't form a false phrase, so they need no gap (and the index is
      ** smaller without one). */
      rc = emit(s, 0, CJK_GAP_TOKEN, (int)sizeof(CJK_GAP_TOKEN) - 1, s->iRunEnd, iStart);
      if (rc != SQLITE_OK) return rc;
    }
    if (nChar > 0) {
      int nCur = cjk_utf8_put(cp, (unsigned char *)aTok + nPrev);
      rc = emit(s, 0, aTok, nPrev + nCur, iPrev, i);
      if (rc != SQLITE_OK) return rc;
    }
    prevCp = cp;
    nPrev = cjk_utf8_put(prevCp, (unsigned char *)aTok);
    iPrev = iStart;
    nChar++;
  }
  /* here aTok[0..nPrev) holds the last character, which spans z[iPrev..i) */
  if (nChar == 1) {
    rc = emit(s, 0, aTok, nPrev, iPrev, i);
    if (rc != SQLITE_OK) return rc;
  } else if (nChar > 1 && !(flags & FTS5_TOKENIZE_QUERY)) {
    rc = emit(s, FTS5_TOKEN_COLOCATED, aTok, nPrev, iPrev, i);
    if (rc != SQLITE_OK) return rc;
  }
  s->bAfterCjk = 1;
  s->iRunEnd = i;
  s->lastCp = prevCp;
  *pi = i;
  return SQLITE_OK;
}

int cjk_tokenizer_tokenize(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText,
                           int nText, const char *pLocale, int nLocale, cjk_xtoken_fn xToken) {
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  const unsigned char *z = (const unsigned char *)pText;
  TokState s;
  int n = nText, i = 0, rc = SQLITE_OK;
  if (!p || !xToken) return SQLITE_MISUSE;
  if (!z || n < 0) n = 0;
  memset(&s, 0, sizeof(s));
  s.pCtx = pCtx;
  s.xToken = xToken;
  while (i < n && rc == SQLITE_OK) {
    /* a segment of non-CJK text: [iSeg, i) */
    int iSeg = i, bFold = 0, bCjk = 0;
    while (i < n) {
      unsigned cp;
      int j;
      if (z[i] < 0xE1) {
        /* No CJK letter starts below U+1100 (lead byte 0xE1), and a byte >= 0xE1
        ** is never swallowed as a continuation byte, so these bytes can be
        ** skipped one by one without decoding. */
        if (z[i] == '\n' && p->bSplitNewline && i - iSeg >= CJK_CHUNK) {
          i++;
          break; /* hand this long piece over now; '\n' separates anyway */
        }
        i++;
        continue;
      }
      j = cjk_utf8_next(z, n, i, &cp);
      if (isCjkLetter(p, cp)) {
        bCjk = 1;
        break;
      }
      if (cp >= 0xFF01 && cp <= 0xFF5E) bFold = 1;
      i = j;
    }
    if (i > iSeg) {
      rc = tokenizeSegment(p, &s, flags, z + iSeg, i - iSeg, iSeg, bFold, pLocale, nLocale);
      if (rc != SQLITE_OK) break;
    }
    if (bCjk) rc = tokenizeCjkRun(p, &s, flags, z, n, &i); /* consumes >= 1 character */
  }
  if (s.rc != SQLITE_OK) return s.rc;
  return rc;
}

int cjk_xTokenize_v1(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText, int nText,
                     cjk_xtoken_fn xToken) {
  return cjk_tokenizer_tokenize(pTok, pCtx, flags, pText, nText, 0, 0, xToken);
}
