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
**   - Every allocation goes through the host's sqlite3_malloc64/sqlite3_free
**     (copied into each registration), so the host's heap limit and memory
**     accounting see it; extra memory per call is O(CJK_CHUNK), not O(nText),
**     unless one token unicode61 reads is longer than that (then O(its length)).
**   - Every position is counted as emitting every token would count it, also
**     where cjk_match's collector is spared tokens it does not need.
**   - The first non-OK code returned by xToken stops tokenizing.  SQLITE_DONE
**     then becomes SQLITE_OK, as SQLite's own tokenizers return it; any other
**     code is returned as is.
*/
#include <string.h>

#include "cjk_aux.h"
#include "cjk_chars.h"
#include "cjk_tokenizer.h"
#include "cjk_variants.h"

/* The registration's user data (what FTS5 hands xCreate): allocated with the
** host's allocator, freed by FTS5 when the connection closes. */
typedef struct CjkTokModule {
  fts5_api *pApi;
  void *(*xMalloc)(sqlite3_uint64);
  void (*xFree)(void *);
} CjkTokModule;

/* One tokenizer instance.  It may outlive the connection that created it (an
** APSW Connection.fts5_tokenizer() object kept past close(), say), so it holds
** nothing that points into memory the connection owns: the unicode61 methods
** are copied by value, not kept as a pointer into FTS5's per-connection
** record of them, and the allocator is the host's routines, not the module. */
typedef struct CjkTokenizer {
  void *(*xMalloc)(sqlite3_uint64);
  void (*xFree)(void *);
  int bV2;                    /* unicode61 reached through fts5_tokenizer_v2 */
  fts5_tokenizer inner1;      /* its methods when bV2 == 0 */
  fts5_tokenizer_v2 inner2;   /* its methods when bV2 == 1 */
  Fts5Tokenizer *pInner;      /* the unicode61 instance */
  int nSep;                   /* CJK code points named in separators= ... */
  unsigned *aSep;             /* ... which then split CJK runs */
  int bFoldVariants;          /* fold_variants 1: Han variants fold (cjk_variants.h) */
  int bUnigrams;              /* unigrams 1: see "unigrams option" below */
  int bAsciiKnown;            /* aByteClass is set (the probe at xCreate worked) */
  int bAsciiAlnum;            /* ... and its ASCII token characters are exactly [0-9A-Za-z] */
  unsigned char aByteClass[256]; /* per byte: BYTE_SEP, BYTE_TOKEN or BYTE_OTHER (non-ASCII) */
  uint64_t mSymbolSep;        /* bit k: U+3000+k (CJK punctuation) is a separator, when bAsciiKnown */
} CjkTokenizer;

/* Per-call state shared with the callback that forwards unicode61's tokens. */
typedef struct TokState {
  void *pCtx;
  cjk_xtoken_fn xToken;
  int rc;          /* first non-OK code from xToken */
  int iBase;       /* offset of the segment being handed to unicode61 */
  const int *aMap; /* folded-chunk offset -> segment offset, or NULL */
  int nMap;        /* entries in aMap minus one (folded length) */
  int bCut;        /* the folded chunk ends before its segment does */
  int iRestart;    /* segment offset of the token cut at the chunk end, or -1 */
  int bAfterCjk;   /* the last token emitted came from a CJK run */
  int iRunEnd;     /* end offset of the last CJK run */
  unsigned lastCp; /* its last character, folded */
  /* Sparing cjk_match's collector (see spareToken), when bSpare is set: */
  int bSpare;
  int nSpare;      /* positions it does not need before the next one it does (-1: none) */
  int nSpared;     /* tokens counted, not emitted, not yet told to it */
  int bLastSpared; /* the last token not colocated was counted: so are those colocated with it */
} TokState;

/* Full-width ASCII must be folded before unicode61 sees it, which means a
** copy of the text and an offset map (5 bytes per input byte).  Segments that
** need folding are copied this many input bytes at a time (more only while a
** single token is longer), so the extra memory stays bounded whatever the
** length of the segment. */
#define CJK_CHUNK 65536

/* Most tokenizer arguments (names and values) accepted: a bound on what one
** tokenize= argument may carry. */
#define CJK_MAX_ARGS 64

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
    } else if (optionIs(zName, "unigrams")) {
      if (!((zVal[0] == '0' || zVal[0] == '1') && zVal[1] == 0)) {
        setErr(zErr, nErr, "cjk_unicode61: unigrams must be 0 or 1, not '%s'", zVal);
        return 1;
      }
    } else if (optionIs(zName, "fold_variants")) {
      if (!((zVal[0] == '0' || zVal[0] == '1') && zVal[1] == 0)) {
        setErr(zErr, nErr, "cjk_unicode61: fold_variants must be 0 or 1, not '%s'", zVal);
        return 1;
      }
    } else if (!optionIs(zName, "tokenchars") && !optionIs(zName, "separators")) {
      setErr(zErr, nErr,
             "cjk_unicode61: unknown option '%s' (known: remove_diacritics, tokenchars, "
             "separators, categories, fold_variants, unigrams)",
             zName);
      return 1;
    }
  }
  if (nArg > CJK_MAX_ARGS) {
    setErr(zErr, nErr, "cjk_unicode61: too many options (at most 32 name value pairs)", 0);
    return 1;
  }
  return 0;
}

/* ---- unigrams option ---------------------------------------------------
** "unigrams 1" also indexes, in documents, every CJK character as a unigram
** colocated with the bigram it starts (the run-final character already is
** one), so the plain string "X" finds every occurrence of X, in one doclist.
** Off by default: the option is part of the table's tokenize= argument, so a
** table created without it keeps being tokenized exactly as when it was
** created (an FTS5 delete re-tokenizes the row; a changed tokenization would
** corrupt the index).  unicode61 does not know the option: it is taken out of
** the arguments handed to it. */
/* Collect the CJK letters named in every separators= option. */
static int collectSeparators(CjkTokenizer *p, const char **azArg, int nArg) {
  int i, nSep = 0, bFill;
  for (bFill = 0; bFill < 2; bFill++) { /* count, then fill */
    for (i = 0; i + 1 < nArg; i += 2) {
      const unsigned char *z;
      int n, k;
      if (!optionIs(azArg[i], "separators")) continue;
      z = (const unsigned char *)azArg[i + 1];
      n = (int)strlen((const char *)z);
      for (k = 0; k < n;) {
        unsigned cp;
        k = cjk_utf8_next(z, n, k, &cp);
        if (!cjk_is_cjk(cp)) continue;
        if (bFill) {
          p->aSep[p->nSep++] = cp;
        } else {
          nSep++;
        }
      }
    }
    if (!bFill) {
      if (nSep == 0) return SQLITE_OK;
      p->aSep = p->xMalloc(sizeof(unsigned) * (sqlite3_uint64)nSep);
      if (!p->aSep) return SQLITE_NOMEM;
    }
  }
  return SQLITE_OK;
}

/* Our own options (fold_variants, unigrams) are not unicode61's: take them
** out of the list unicode61 gets.  *pazInner is azArg itself when there is nothing to take
** out, else a copy the caller frees. */
static int splitOwnOptions(CjkTokenizer *p, const char **azArg, int nArg, const char ***pazInner,
                           int *pnInner) {
  int i, n = 0, bOwn = 0;
  const char **aInner;
  for (i = 0; i + 1 < nArg; i += 2) {
    if (optionIs(azArg[i], "fold_variants")) {
      p->bFoldVariants = azArg[i + 1][0] == '1';
      bOwn = 1;
    } else if (optionIs(azArg[i], "unigrams")) {
      p->bUnigrams = azArg[i + 1][0] == '1';
      bOwn = 1;
    }
  }
  *pazInner = azArg;
  *pnInner = nArg;
  if (!bOwn) return SQLITE_OK;
  aInner = p->xMalloc(sizeof(const char *) * (sqlite3_uint64)nArg);
  if (!aInner) return SQLITE_NOMEM;
  for (i = 0; i + 1 < nArg; i += 2) {
    if (optionIs(azArg[i], "fold_variants") || optionIs(azArg[i], "unigrams")) continue;
    aInner[n++] = azArg[i];
    aInner[n++] = azArg[i + 1];
  }
  *pazInner = aInner;
  *pnInner = n;
  return SQLITE_OK;
}

/* ---- sparing cjk_match's collector ------------------------------------
** cjk_match re-tokenizes a column only to place a few tokens (cjk_aux.h,
** cjk_collect_token).  With its collector as xToken, a token at a position
** it does not need is counted, not emitted (spareToken): a CJK run's tokens,
** and whole ASCII tokens, which are then not handed to unicode61 at all
** (spareSegment).  That needs unicode61's ASCII token characters under this
** instance's options (categories, tokenchars, separators): unicode61 classes
** each ASCII character on its own, so tokenizing each alone tells them; the
** CJK punctuation between runs is probed the same way (noTokenIn).  Where
** the ASCII token characters are unicode61's default ones, whole tokens are
** counted eight bytes at a time (countAsciiTokens), and a CJK run's common
** three-byte letters are counted without the full read (cjk_plain_at). */

/* aByteClass: an ASCII separator, an ASCII token character, any other byte. */
#define BYTE_SEP 0
#define BYTE_TOKEN 1
#define BYTE_OTHER 2

/* Eight ASCII bytes at a time, for an instance whose ASCII token characters
** are [0-9A-Za-z] (bAsciiAlnum, unicode61's default).  Each byte of a word
** holds its class in its high bit (set: a token character); byte k of the
** text must be bits 8k..8k+7 of the word, so a big-endian host does without
** (probeAscii). */
#define SWAR_ONES 0x0101010101010101ull
#define SWAR_HIGH 0x8080808080808080ull

static const unsigned char kLittleEndianOne[8] = {1, 0, 0, 0, 0, 0, 0, 0};

static uint64_t loadWord(const unsigned char *z) {
  uint64_t w;
  memcpy(&w, z, 8); /* no alignment or aliasing assumption */
  return w;
}

/* w holds eight bytes below 0x80: the high bit of each [0-9A-Za-z] byte.
** Adding (0x80 - lo) to a byte sets its high bit exactly when it is >= lo,
** and no sum carries into the next byte (0x7F + 0x50 < 0x100). */
static uint64_t alnumBits(uint64_t w) {
  uint64_t l = w | 0x20 * SWAR_ONES; /* A-Z onto a-z; no other byte lands in a-z */
  uint64_t digit = (w + 0x50 * SWAR_ONES) & ~(w + 0x46 * SWAR_ONES); /* >= '0' and not >= ':' */
  uint64_t alpha = (l + 0x1F * SWAR_ONES) & ~(l + 0x05 * SWAR_ONES); /* >= 'a' and not >= '{' */
  return (digit | alpha) & SWAR_HIGH;
}

static int countToken(void *pCtx, int tflags, const char *pTok, int nTok, int iStart, int iEnd) {
  (void)tflags, (void)pTok, (void)nTok, (void)iStart, (void)iEnd;
  (*(int *)pCtx)++;
  return SQLITE_OK;
}

/* How many tokens unicode61 makes of z[0..n) alone, or -1 on an error. */
static int innerTokenCount(CjkTokenizer *p, const char *z, int n) {
  int nTok = 0, rc;
  if (p->bV2) {
    rc = p->inner2.xTokenize(p->pInner, (void *)&nTok, FTS5_TOKENIZE_AUX, z, n, 0, 0, countToken);
  } else {
    rc = p->inner1.xTokenize(p->pInner, (void *)&nTok, FTS5_TOKENIZE_AUX, z, n, countToken);
  }
  return rc == SQLITE_OK ? nTok : -1;
}

/* Classes every ASCII character, and the CJK punctuation of U+3000..U+303F
** (which in CJK text sits between most runs), as unicode61 does under this
** instance's options.  On an error (out of memory, say) bAsciiKnown stays 0
** and this instance always tokenizes in full. */
static void probeAscii(CjkTokenizer *p) {
  int c;
  uint64_t m = 0;
  for (c = 0; c < 128; c++) {
    char ch = (char)c;
    int nTok = innerTokenCount(p, &ch, 1);
    if (nTok < 0) return;
    p->aByteClass[c] = nTok > 0 ? BYTE_TOKEN : BYTE_SEP;
  }
  for (c = 0; c < 64; c++) {
    unsigned char a[3];
    int nTok = innerTokenCount(p, (const char *)a, cjk_utf8_put(0x3000u + (unsigned)c, a));
    if (nTok < 0) return;
    if (nTok == 0) m |= (uint64_t)1 << c;
  }
  p->mSymbolSep = m;
  for (c = 128; c < 256; c++) p->aByteClass[c] = BYTE_OTHER;
  p->bAsciiKnown = 1;
  p->bAsciiAlnum = 1;
  for (c = 0; c < 128; c++) {
    int bAlnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (p->aByteClass[c] != (bAlnum ? BYTE_TOKEN : BYTE_SEP)) p->bAsciiAlnum = 0;
  }
  if (loadWord(kLittleEndianOne) != 1) p->bAsciiAlnum = 0; /* a big-endian host */
}

/* ---- create / delete --------------------------------------------------- */

static void cjkDelete(Fts5Tokenizer *pTok) {
  CjkTokenizer *p = (CjkTokenizer *)pTok;
  if (!p) return;
  if (p->pInner) {
    if (p->bV2) {
      p->inner2.xDelete(p->pInner);
    } else {
      p->inner1.xDelete(p->pInner);
    }
  }
  p->xFree(p->aSep);
  p->xFree(p);
}

/* xCreate: pUserData is the registration's CjkTokModule. */
static int cjkCreate(void *pUserData, const char **azArg, int nArg, Fts5Tokenizer **ppOut) {
  const CjkTokModule *pMod = (const CjkTokModule *)pUserData;
  fts5_api *pApi;
  CjkTokenizer *p;
  void *pUd = 0;
  const char **azInner = 0;
  int rc, nInner = 0;
  char zErr[8];
  *ppOut = 0;
  if (!pMod || !pMod->pApi) return SQLITE_ERROR;
  pApi = pMod->pApi;
  if (cjk_check_args(azArg, nArg, zErr, (int)sizeof(zErr))) return SQLITE_ERROR;
  p = pMod->xMalloc(sizeof(*p));
  if (!p) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  p->xMalloc = pMod->xMalloc;
  p->xFree = pMod->xFree;
  rc = splitOwnOptions(p, azArg, nArg, &azInner, &nInner);
  if (rc != SQLITE_OK) {
    p->xFree(p);
    return rc;
  }
  if (pApi->iVersion >= 3) {
    fts5_tokenizer_v2 *pInner2 = 0;
    p->bV2 = 1;
    rc = pApi->xFindTokenizer_v2(pApi, "unicode61", &pUd, &pInner2);
    if (rc == SQLITE_OK && !pInner2) rc = SQLITE_ERROR;
    if (rc == SQLITE_OK) {
      p->inner2 = *pInner2; /* FTS5's copy goes away with the connection */
      rc = p->inner2.xCreate(pUd, azInner, nInner, &p->pInner);
    }
  } else {
    rc = pApi->xFindTokenizer(pApi, "unicode61", &pUd, &p->inner1);
    if (rc == SQLITE_OK) rc = p->inner1.xCreate(pUd, azInner, nInner, &p->pInner);
  }
  if (azInner != azArg) p->xFree((void *)azInner);
  if (rc == SQLITE_OK) rc = collectSeparators(p, azArg, nArg);
  if (rc == SQLITE_OK) probeAscii(p);
  if (rc != SQLITE_OK) {
    cjkDelete((Fts5Tokenizer *)p);
    return rc;
  }
  *ppOut = (Fts5Tokenizer *)p;
  return SQLITE_OK;
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
  int rc;
  if (s->bSpare) {
    if (s->nSpared > 0) cjk_collect_skip(s->pCtx, s->nSpared); /* it counts positions */
    s->nSpared = 0;
    if ((tflags & FTS5_TOKEN_COLOCATED) == 0) s->bLastSpared = 0;
  }
  rc = s->xToken(s->pCtx, tflags, pTok, nTok, iStart, iEnd);
  if (rc != SQLITE_OK && s->rc == SQLITE_OK) s->rc = rc;
  if (s->bSpare) s->nSpare = cjk_collect_skippable(s->pCtx);
  return rc;
}

/* Count n tokens that are not colocated (n <= nSpare) instead of emitting
** them.  (Tokens colocated with the last then go too: at its position.) */
CJK_INLINE void spareTokens(TokState *s, int n) {
  s->nSpare -= n;
  s->nSpared += n;
  s->bLastSpared = 1;
}

/* Sparing the collector: count the next token that is not colocated instead
** of emitting it, when the collector does not need its position? */
CJK_INLINE int spareToken(TokState *s) {
  if (!s->bSpare || s->nSpare <= 0) return 0;
  spareTokens(s, 1);
  return 1;
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
    if (s->bCut && iEnd == s->nMap) {
      /* The token reaches the end of a chunk that is not the end of the
      ** segment, so it may go on in the next chunk: stop here and hand it
      ** over again from its start. */
      s->iRestart = s->aMap[iStart];
      return SQLITE_DONE;
    }
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
    rc = p->inner2.xTokenize(p->pInner, (void *)s, flags, z, n, pLocale, nLocale, forwardToken);
  } else {
    rc = p->inner1.xTokenize(p->pInner, (void *)s, flags, z, n, forwardToken);
  }
  if (s->rc != SQLITE_OK) return s->rc; /* xToken's code wins, SQLITE_DONE included */
  if (rc == SQLITE_DONE) rc = SQLITE_OK; /* stopped at a chunk end by forwardToken */
  return rc;
}

/* Hand non-CJK text z[0..n) (at offset iBase of the input) to unicode61,
** folding full-width ASCII first when bFold is set.  Folded text goes over
** in chunks of about CJK_CHUNK input bytes: unicode61 decides where tokens
** end, and a token that reaches the end of a chunk is handed over again at
** the start of the next one, so the tokens are those of the whole segment. */
static int tokenizeSegment(CjkTokenizer *p, TokState *s, int flags, const unsigned char *z, int n,
                           int iBase, int bFold, const char *pLocale, int nLocale) {
  unsigned char *aOut = 0;
  int *aMap = 0;
  int nAlloc = 0, nChunk = CJK_CHUNK, iPos = 0, rc = SQLITE_OK;
  s->iBase = iBase;
  s->aMap = 0;
  if (!bFold) return innerTokenize(p, s, flags, (const char *)z, n, pLocale, nLocale);
  while (iPos < n) {
    int i = iPos, o = 0, iEnd = iPos;
    while (iEnd < n && iEnd - iPos < nChunk) { /* the chunk ends on a character boundary */
      unsigned cp;
      iEnd = cjk_utf8_next(z, n, iEnd, &cp);
    }
    if (iEnd - iPos > nAlloc) { /* folding never lengthens: iEnd - iPos bytes suffice */
      p->xFree(aOut);
      p->xFree(aMap);
      nAlloc = iEnd - iPos;
      aOut = p->xMalloc((sqlite3_uint64)nAlloc + 1);
      aMap = p->xMalloc(sizeof(int) * ((sqlite3_uint64)nAlloc + 1));
      if (!aOut || !aMap) {
        rc = SQLITE_NOMEM;
        break;
      }
    }
    while (i < iEnd) {
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
    aMap[o] = iEnd;
    s->aMap = aMap;
    s->nMap = o;
    s->bCut = iEnd < n;
    s->iRestart = -1;
    rc = innerTokenize(p, s, flags, (const char *)aOut, o, pLocale, nLocale);
    s->aMap = 0;
    if (rc != SQLITE_OK || iEnd >= n) break;
    if (s->iRestart < 0) {
      iPos = iEnd; /* no token reached the chunk end */
    } else if (s->iRestart > iPos) {
      iPos = s->iRestart;
    } else if (nChunk <= n / 2) {
      nChunk *= 2; /* one token fills the chunk: take a bigger one */
    } else {
      nChunk = n;
    }
  }
  p->xFree(aOut);
  p->xFree(aMap);
  return rc;
}

/* Count whole ASCII tokens from z[i] (a token's first byte) on, at most nMax,
** a word at a time while the words are ASCII.  Returns where the count
** stops, the first byte of a token or just after a separator, so the caller
** goes on from there as if it had counted *pnTok tokens one by one; a token
** still open there (it may run into non-ASCII) is not counted.  Invariant:
** nStart tokens start in z[i..q), all but one still open at q have ended,
** and nStart <= nMax. */
static int countAsciiTokens(const unsigned char *aClass, const unsigned char *z, int i, int iEnd, int nMax,
                            int *pnTok) {
  int q = i, nStart = 0;
  uint64_t carry = 0; /* 0x80 when z[q - 1] is a token character */
  while (q <= iEnd - 8) {
    uint64_t w = loadWord(z + q), t, starts;
    int n;
    if (w & SWAR_HIGH) break;
    t = alnumBits(w);
    starts = t & ~((t << 8) | carry);
    n = (int)(((starts >> 7) * SWAR_ONES) >> 56); /* at most 8: no carry between bytes */
    if (n > nMax - nStart) break;
    nStart += n;
    carry = t >> 56;
    q += 8;
  }
  if (carry) {
    nStart--; /* the open token */
    while (q > i && aClass[z[q - 1]] == BYTE_TOKEN) q--; /* back to its start */
  }
  *pnTok = nStart;
  return q;
}

/* Non-zero if unicode61 makes no token of z[i..k): every character in it is
** an ASCII separator, a full-width form of one (folded before unicode61 sees
** it), or CJK punctuation it treats as a separator (mSymbolSep). */
static int noTokenIn(const CjkTokenizer *p, const unsigned char *z, int i, int k) {
  while (i < k) {
    if (z[i] < 0x80) {
      if (p->aByteClass[z[i]] != BYTE_SEP) return 0;
      i++;
    } else if (i + 2 < k && z[i] == 0xE3 && z[i + 1] == 0x80 && (z[i + 2] & 0xC0) == 0x80) {
      if (((p->mSymbolSep >> (z[i + 2] & 0x3F)) & 1) == 0) return 0; /* U+3000..U+303F */
      i += 3;
    } else if (i + 2 < k && z[i] == 0xEF && (z[i + 1] == 0xBC || z[i + 1] == 0xBD) && (z[i + 2] & 0xC0) == 0x80) {
      unsigned cp = 0xF000u | ((z[i + 1] & 0x3Fu) << 6) | (z[i + 2] & 0x3Fu); /* U+FF00..U+FF7F */
      if (cp < 0xFF01 || cp > 0xFF5E || p->aByteClass[cp - 0xFEE0] != BYTE_SEP) return 0;
      i += 3;
    } else {
      return 0;
    }
  }
  return 1;
}

/* tokenizeSegment() for the collector: the segment z[iSeg..iEnd) of the
** input.  Whole ASCII tokens (ending at an ASCII separator or the segment's
** end) it does not need are counted; the rest goes to unicode61 in pieces
** that start after a separator (or at the segment's start) and end at one
** (or at its end), where unicode61's tokens end and begin whatever lies
** around them: so positions and emitted tokens are tokenizeSegment()'s.
** Returns SQLITE_DONE once the collector wants no more. */
static int spareSegment(CjkTokenizer *p, TokState *s, int flags, const unsigned char *z, int iSeg, int iEnd,
                        int bFold, const char *pLocale, int nLocale) {
  const unsigned char *aClass = p->aByteClass;
  int i = iSeg, rc = SQLITE_OK;
  while (i < iEnd) {
    int j, k, bAscii;
    while (i < iEnd && aClass[z[i]] == BYTE_SEP) i++;
    if (i >= iEnd) break;
    if (s->nSpare < 0) return SQLITE_DONE;
    if (p->bAsciiAlnum && s->nSpare > 1 && aClass[z[i]] == BYTE_TOKEN) {
      int nTok, q = countAsciiTokens(aClass, z, i, iEnd, s->nSpare, &nTok);
      if (nTok > 0) {
        spareTokens(s, nTok);
        s->bAfterCjk = 0; /* as when forwardToken() emits them */
        i = q;
        continue;
      }
    }
    for (j = i; j < iEnd && aClass[z[j]] == BYTE_TOKEN; j++) {
    }
    bAscii = j > i && (j == iEnd || aClass[z[j]] == BYTE_SEP);
    if (bAscii && spareToken(s)) {
      s->bAfterCjk = 0; /* as when forwardToken() emits it */
      i = j;
      continue;
    }
    for (k = j; k < iEnd && aClass[z[k]] != BYTE_SEP; k++) {
    }
    if (noTokenIn(p, z, i, k)) { /* CJK punctuation, say: nothing to emit or count */
      i = k;
      continue;
    }
    rc = tokenizeSegment(p, s, flags, z + i, k - i, i, bAscii ? 0 : bFold, pLocale, nLocale);
    if (rc != SQLITE_OK) break;
    i = k;
  }
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
    int iStart;
    if (nChar > 0 && s->bSpare && p->nSep == 0) {
      /* Sparing: a plain character followed by another is one position, the
      ** bigram it ends; only the last one counted needs its full form. */
      unsigned next = cjk_plain_at(z, n, i), after;
      int bCounted = 0;
      while (next && s->nSpare > 0 && (after = cjk_plain_at(z, n, i + 3)) != 0) {
        spareTokens(s, 1);
        prevCp = next;
        iPrev = i;
        i += 3;
        nChar++;
        bCounted = 1;
        next = after;
      }
      if (bCounted) {
        if (p->bFoldVariants) prevCp = cjk_fold_variant(prevCp);
        nPrev = cjk_utf8_put(prevCp, (unsigned char *)aTok);
      }
    }
    iStart = i;
    if (!readCjk(p, z, n, &i, &cp)) break;
    if (nChar == 0 && s->bAfterCjk && cp == s->lastCp) {
      /* Only separators since the last run, and this run starts with the
      ** character that one ended with: without a gap, that run's last bigram
      ** (x,y) and this run's first (y,z) would be adjacent and the phrase xyz
      ** would match across the break.  Runs that don't share that character
      ** can't form a false phrase, so they need no gap (and the index is
      ** smaller without one). */
      if (!spareToken(s)) {
        rc = emit(s, 0, CJK_GAP_TOKEN, (int)sizeof(CJK_GAP_TOKEN) - 1, s->iRunEnd, iStart);
        if (rc != SQLITE_OK) return rc;
      }
    }
    if (nChar > 0 && !spareToken(s)) {
      int nCur = cjk_utf8_put(cp, (unsigned char *)aTok + nPrev);
      rc = emit(s, 0, aTok, nPrev + nCur, iPrev, i);
      if (rc != SQLITE_OK) return rc;
      if (p->bUnigrams && !(flags & FTS5_TOKENIZE_QUERY)) {
        /* unigrams option: the bigram's first character, at its position */
        rc = emit(s, FTS5_TOKEN_COLOCATED, aTok, nPrev, iPrev, iStart);
        if (rc != SQLITE_OK) return rc;
      }
    }
    prevCp = cp;
    nPrev = cjk_utf8_put(prevCp, (unsigned char *)aTok);
    iPrev = iStart;
    nChar++;
  }
  /* here aTok[0..nPrev) holds the last character, which spans z[iPrev..i) */
  if (nChar == 1 && !spareToken(s)) {
    rc = emit(s, 0, aTok, nPrev, iPrev, i);
    if (rc != SQLITE_OK) return rc;
  } else if (nChar > 1 && !(flags & FTS5_TOKENIZE_QUERY) && !s->bLastSpared) {
    rc = emit(s, FTS5_TOKEN_COLOCATED, aTok, nPrev, iPrev, i);
    if (rc != SQLITE_OK) return rc;
  }
  s->bAfterCjk = 1;
  s->iRunEnd = i;
  s->lastCp = prevCp;
  *pi = i;
  return SQLITE_OK;
}

/* Non-zero if z[i..j), read by cjk_utf8_next() as cp, is malformed UTF-8
** (cjk_utf8_next() reads those as U+FFFD, and so does a real U+FFFD). */
static int isMalformed(const unsigned char *z, int i, int j, unsigned cp) {
  return cp == 0xFFFD && !(j - i == 3 && z[i] == 0xEF && z[i + 1] == 0xBF && z[i + 2] == 0xBD);
}

/* Non-zero when z[0..n) holds nothing that readCjk() reads as a plain letter
** (cjk_plain_at) other than itself, or joins to the letter before it: no
** variation selector (U+FE00..FE0F is EF B8 80..8F, U+E0100..E01EF is F3 A0
** 84..87 xx), no voiced sound mark (U+3099/309A is E3 82 99/9A) and no
** half-width kana or voiced mark (U+FF61..FF9F is EF BD A1..EF BE 9F).  Then,
** with fold_variants 0, each plain letter stands for itself where its bytes
** are (cjk_collect_literal).  The bytes are tested loosely (a whole second
** byte's block), since a false alarm costs only the tokenizing this spares. */
static int readsAsIs(const unsigned char *z, int n) {
  const unsigned char *q, *e = z + n;
  if (n <= 0 || memchr(z, 0xF3, (size_t)n)) return n <= 0;
  for (q = z; (q = memchr(q, 0xEF, (size_t)(e - q))) != 0; q++) {
    if (q + 1 < e && (q[1] == 0xB8 || q[1] == 0xBE || (q[1] == 0xBD && (q + 2 >= e || q[2] >= 0xA1)))) return 0;
  }
  for (q = z; (q = memchr(q, 0x82, (size_t)(e - q))) != 0; q++) {
    if (q > z && q[-1] == 0xE3 && q + 1 < e && (q[1] == 0x99 || q[1] == 0x9A)) return 0;
  }
  return 1;
}

/* xTokenize of fts5_tokenizer_v2 (pLocale goes on to unicode61); the v1
** entry point below passes no locale. */
static int cjkTokenize(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText,
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
  if (xToken == cjk_collect_token && p->nSep == 0 && !p->bFoldVariants && cjk_collect_planned(pCtx) &&
      readsAsIs(z, n)) {
    /* cjk_match's collector may place its instances by their text */
    int bPlaced = 0;
    rc = cjk_collect_literal(pCtx, pText, n, &bPlaced);
    if (rc != SQLITE_OK || bPlaced) return rc;
  }
  if (xToken == cjk_collect_token && p->bAsciiKnown) { /* cjk_match's collector: spareToken() */
    s.bSpare = 1;
    s.nSpare = cjk_collect_skippable(pCtx);
  }
  while (i < n && rc == SQLITE_OK) {
    /* a segment of non-CJK text: [iSeg, i) */
    int iSeg = i, bFold = 0, bCjk = 0, iNext = -1;
    while (i < n) {
      unsigned cp;
      int j;
      if (z[i] < 0x80) {
        i = cjk_ascii_end(z, i, n);
        continue;
      }
      j = cjk_utf8_next(z, n, i, &cp);
      if (isMalformed(z, i, j, cp)) {
        /* Invalid UTF-8 is a separator, whatever SQLite's reader would make
        ** of it (it reads some overlong forms and stray bytes as letters,
        ** which no other reader of the text sees). */
        iNext = j;
        break;
      }
      if (isCjkLetter(p, cp)) {
        bCjk = 1;
        break;
      }
      if (cp >= 0xFF01 && cp <= 0xFF5E) bFold = 1;
      i = j;
    }
    if (i > iSeg && s.bSpare) {
      rc = spareSegment(p, &s, flags, z, iSeg, i, bFold, pLocale, nLocale);
      if (rc != SQLITE_OK) break;
    } else if (i > iSeg) {
      rc = tokenizeSegment(p, &s, flags, z + iSeg, i - iSeg, iSeg, bFold, pLocale, nLocale);
      if (rc != SQLITE_OK) break;
    }
    if (bCjk) rc = tokenizeCjkRun(p, &s, flags, z, n, &i); /* consumes >= 1 character */
    if (iNext >= 0) i = iNext;
  }
  if (s.rc != SQLITE_OK) rc = s.rc;
  /* A callback that asks to stop with SQLITE_DONE has been obeyed; like
  ** SQLite's own tokenizers, report that as success. */
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  return rc;
}

static int cjkTokenizeV1(Fts5Tokenizer *pTok, void *pCtx, int flags, const char *pText, int nText,
                         cjk_xtoken_fn xToken) {
  return cjkTokenize(pTok, pCtx, flags, pText, nText, 0, 0, xToken);
}

/* ---- registration ------------------------------------------------------ */

static void cjkTokModuleDestroy(void *pUserData) {
  CjkTokModule *pMod = (CjkTokModule *)pUserData;
  pMod->xFree(pMod);
}

int cjk_tokenizer_register(fts5_api *pFts5, const CjkHost *pHost) {
  CjkTokModule *pMod;
  int rc;
  if (!pFts5 || !pHost || !pHost->malloc64 || !pHost->free) return SQLITE_MISUSE;
  pMod = pHost->malloc64(sizeof(*pMod));
  if (!pMod) return SQLITE_NOMEM;
  pMod->pApi = pFts5;
  pMod->xMalloc = pHost->malloc64;
  pMod->xFree = pHost->free;
  if (pFts5->iVersion >= 3) {
    fts5_tokenizer_v2 tok;
    memset(&tok, 0, sizeof(tok));
    tok.iVersion = 2;
    tok.xCreate = cjkCreate;
    tok.xDelete = cjkDelete;
    tok.xTokenize = cjkTokenize;
    rc = pFts5->xCreateTokenizer_v2(pFts5, CJK_TOKENIZER_NAME, (void *)pMod, &tok,
                                    cjkTokModuleDestroy);
  } else {
    fts5_tokenizer tok;
    tok.xCreate = cjkCreate;
    tok.xDelete = cjkDelete;
    tok.xTokenize = cjkTokenizeV1;
    rc = pFts5->xCreateTokenizer(pFts5, CJK_TOKENIZER_NAME, (void *)pMod, &tok,
                                 cjkTokModuleDestroy);
  }
  if (rc != SQLITE_OK) pHost->free(pMod); /* FTS5 keeps xDestroy only on success */
  return rc;
}
