/*
** cjk_snippet.c — the one snippet rule (stated in cjk_snippet.h).
**
** Phases of cjk_snip_choose(), each a small function:
**   snipLead      the first non-space character
**   snipMerge     matches sorted, merged into highlights
**   snipFocus     the W-wide stretch with the most phrases and matches
**   snipScan      the characters around the focus (only those: memory stays
**                 proportional to the budget, not to the text), and what the
**                 edges need to know of the rest (the text is read up to a
**                 little past the focus, not to its end, and from a little
**                 before it when the caller knows the focus's byte offset)
**   snipStart, snipEnd, snipGiveBack, snipClusters   the window's edges
**
** Invariants: no allocation here (the caller provides CjkSnipWork); nothing
** reads z[n] or beyond; every window edge is a character boundary inside the
** decoded region, so the caller can map it to bytes with aOff.
*/
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cjk_chars.h"
#include "cjk_snippet.h"

/* ---- character classes -------------------------------------------------- */

int cjk_utf8_strict(const unsigned char *z, int n, int i, unsigned *pCp) {
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
    if (j >= n || z[j] < lo || z[j] > hi) {
      *pCp = CJK_BADCHAR;
      return j;
    }
    b = z[j];
    cp = (cp << 6) | (b & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  *pCp = cp;
  return j;
}

int cjk_snip_is_space(unsigned cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

/* Characters after which a sentence (or line) always ends.  ASCII . ! ? ;
** end one only before white space (isBoundary). */
static int isTermCp(unsigned cp) {
  switch (cp) {
    case '\n': case '\r':
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
  if (cp == CJK_BADCHAR || cjk_snip_is_space(cp) || cjk_is_cjk(cp)) return 0;
  if (cp >= 0xFF01 && cp <= 0xFF5E) return isWordCp(cjk_fold_width(cp));
  if (cp >= 0x2000 && cp <= 0x2BFF) return 0; /* punctuation, symbols, arrows ... */
  if (cp >= 0x3000 && cp <= 0x303F) return 0; /* CJK symbols and punctuation */
  if (cp >= 0xFE30 && cp <= 0xFE6F) return 0; /* CJK compatibility / small forms */
  if (cp >= 0xFF00 && cp <= 0xFF65) return 0; /* full/half-width punctuation */
  /* scripts written without spaces between words, and pictographs: no space
  ** to move an edge to, so a stretch of them is no word to keep whole */
  if (cp >= 0x0E00 && cp <= 0x0FFF) return 0;   /* Thai, Lao, Tibetan */
  if (cp >= 0x1000 && cp <= 0x109F) return 0;   /* Myanmar */
  if (cp >= 0x1780 && cp <= 0x17FF) return 0;   /* Khmer */
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return 0; /* emoji, pictographs, playing cards ... */
  if (cp >= 0xFFF0 && cp <= 0xFFFF) return 0;   /* specials, U+FFFD among them */
  return cp >= 0xC0;
}

/* General Category M (Mn, Mc, Me) of Unicode 14.0, as inclusive ranges.
** tests/test_snippet_rule.py checks it against Python's unicodedata. */
static const unsigned aMark[][2] = {
  {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2},
  {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A}, {0x064B, 0x065F}, {0x0670, 0x0670},
  {0x06D6, 0x06DC}, {0x06DF, 0x06E4}, {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0711, 0x0711},
  {0x0730, 0x074A}, {0x07A6, 0x07B0}, {0x07EB, 0x07F3}, {0x07FD, 0x07FD}, {0x0816, 0x0819},
  {0x081B, 0x0823}, {0x0825, 0x0827}, {0x0829, 0x082D}, {0x0859, 0x085B}, {0x0898, 0x089F},
  {0x08CA, 0x08E1}, {0x08E3, 0x0903}, {0x093A, 0x093C}, {0x093E, 0x094F}, {0x0951, 0x0957},
  {0x0962, 0x0963}, {0x0981, 0x0983}, {0x09BC, 0x09BC}, {0x09BE, 0x09C4}, {0x09C7, 0x09C8},
  {0x09CB, 0x09CD}, {0x09D7, 0x09D7}, {0x09E2, 0x09E3}, {0x09FE, 0x09FE}, {0x0A01, 0x0A03},
  {0x0A3C, 0x0A3C}, {0x0A3E, 0x0A42}, {0x0A47, 0x0A48}, {0x0A4B, 0x0A4D}, {0x0A51, 0x0A51},
  {0x0A70, 0x0A71}, {0x0A75, 0x0A75}, {0x0A81, 0x0A83}, {0x0ABC, 0x0ABC}, {0x0ABE, 0x0AC5},
  {0x0AC7, 0x0AC9}, {0x0ACB, 0x0ACD}, {0x0AE2, 0x0AE3}, {0x0AFA, 0x0AFF}, {0x0B01, 0x0B03},
  {0x0B3C, 0x0B3C}, {0x0B3E, 0x0B44}, {0x0B47, 0x0B48}, {0x0B4B, 0x0B4D}, {0x0B55, 0x0B57},
  {0x0B62, 0x0B63}, {0x0B82, 0x0B82}, {0x0BBE, 0x0BC2}, {0x0BC6, 0x0BC8}, {0x0BCA, 0x0BCD},
  {0x0BD7, 0x0BD7}, {0x0C00, 0x0C04}, {0x0C3C, 0x0C3C}, {0x0C3E, 0x0C44}, {0x0C46, 0x0C48},
  {0x0C4A, 0x0C4D}, {0x0C55, 0x0C56}, {0x0C62, 0x0C63}, {0x0C81, 0x0C83}, {0x0CBC, 0x0CBC},
  {0x0CBE, 0x0CC4}, {0x0CC6, 0x0CC8}, {0x0CCA, 0x0CCD}, {0x0CD5, 0x0CD6}, {0x0CE2, 0x0CE3},
  {0x0D00, 0x0D03}, {0x0D3B, 0x0D3C}, {0x0D3E, 0x0D44}, {0x0D46, 0x0D48}, {0x0D4A, 0x0D4D},
  {0x0D57, 0x0D57}, {0x0D62, 0x0D63}, {0x0D81, 0x0D83}, {0x0DCA, 0x0DCA}, {0x0DCF, 0x0DD4},
  {0x0DD6, 0x0DD6}, {0x0DD8, 0x0DDF}, {0x0DF2, 0x0DF3}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A},
  {0x0E47, 0x0E4E}, {0x0EB1, 0x0EB1}, {0x0EB4, 0x0EBC}, {0x0EC8, 0x0ECD}, {0x0F18, 0x0F19},
  {0x0F35, 0x0F35}, {0x0F37, 0x0F37}, {0x0F39, 0x0F39}, {0x0F3E, 0x0F3F}, {0x0F71, 0x0F84},
  {0x0F86, 0x0F87}, {0x0F8D, 0x0F97}, {0x0F99, 0x0FBC}, {0x0FC6, 0x0FC6}, {0x102B, 0x103E},
  {0x1056, 0x1059}, {0x105E, 0x1060}, {0x1062, 0x1064}, {0x1067, 0x106D}, {0x1071, 0x1074},
  {0x1082, 0x108D}, {0x108F, 0x108F}, {0x109A, 0x109D}, {0x135D, 0x135F}, {0x1712, 0x1715},
  {0x1732, 0x1734}, {0x1752, 0x1753}, {0x1772, 0x1773}, {0x17B4, 0x17D3}, {0x17DD, 0x17DD},
  {0x180B, 0x180D}, {0x180F, 0x180F}, {0x1885, 0x1886}, {0x18A9, 0x18A9}, {0x1920, 0x192B},
  {0x1930, 0x193B}, {0x1A17, 0x1A1B}, {0x1A55, 0x1A5E}, {0x1A60, 0x1A7C}, {0x1A7F, 0x1A7F},
  {0x1AB0, 0x1ACE}, {0x1B00, 0x1B04}, {0x1B34, 0x1B44}, {0x1B6B, 0x1B73}, {0x1B80, 0x1B82},
  {0x1BA1, 0x1BAD}, {0x1BE6, 0x1BF3}, {0x1C24, 0x1C37}, {0x1CD0, 0x1CD2}, {0x1CD4, 0x1CE8},
  {0x1CED, 0x1CED}, {0x1CF4, 0x1CF4}, {0x1CF7, 0x1CF9}, {0x1DC0, 0x1DFF}, {0x20D0, 0x20F0},
  {0x2CEF, 0x2CF1}, {0x2D7F, 0x2D7F}, {0x2DE0, 0x2DFF}, {0x302A, 0x302F}, {0x3099, 0x309A},
  {0xA66F, 0xA672}, {0xA674, 0xA67D}, {0xA69E, 0xA69F}, {0xA6F0, 0xA6F1}, {0xA802, 0xA802},
  {0xA806, 0xA806}, {0xA80B, 0xA80B}, {0xA823, 0xA827}, {0xA82C, 0xA82C}, {0xA880, 0xA881},
  {0xA8B4, 0xA8C5}, {0xA8E0, 0xA8F1}, {0xA8FF, 0xA8FF}, {0xA926, 0xA92D}, {0xA947, 0xA953},
  {0xA980, 0xA983}, {0xA9B3, 0xA9C0}, {0xA9E5, 0xA9E5}, {0xAA29, 0xAA36}, {0xAA43, 0xAA43},
  {0xAA4C, 0xAA4D}, {0xAA7B, 0xAA7D}, {0xAAB0, 0xAAB0}, {0xAAB2, 0xAAB4}, {0xAAB7, 0xAAB8},
  {0xAABE, 0xAABF}, {0xAAC1, 0xAAC1}, {0xAAEB, 0xAAEF}, {0xAAF5, 0xAAF6}, {0xABE3, 0xABEA},
  {0xABEC, 0xABED}, {0xFB1E, 0xFB1E}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0x101FD, 0x101FD},
  {0x102E0, 0x102E0}, {0x10376, 0x1037A}, {0x10A01, 0x10A03}, {0x10A05, 0x10A06}, {0x10A0C, 0x10A0F},
  {0x10A38, 0x10A3A}, {0x10A3F, 0x10A3F}, {0x10AE5, 0x10AE6}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC},
  {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11000, 0x11002}, {0x11038, 0x11046}, {0x11070, 0x11070},
  {0x11073, 0x11074}, {0x1107F, 0x11082}, {0x110B0, 0x110BA}, {0x110C2, 0x110C2}, {0x11100, 0x11102},
  {0x11127, 0x11134}, {0x11145, 0x11146}, {0x11173, 0x11173}, {0x11180, 0x11182}, {0x111B3, 0x111C0},
  {0x111C9, 0x111CC}, {0x111CE, 0x111CF}, {0x1122C, 0x11237}, {0x1123E, 0x1123E}, {0x112DF, 0x112EA},
  {0x11300, 0x11303}, {0x1133B, 0x1133C}, {0x1133E, 0x11344}, {0x11347, 0x11348}, {0x1134B, 0x1134D},
  {0x11357, 0x11357}, {0x11362, 0x11363}, {0x11366, 0x1136C}, {0x11370, 0x11374}, {0x11435, 0x11446},
  {0x1145E, 0x1145E}, {0x114B0, 0x114C3}, {0x115AF, 0x115B5}, {0x115B8, 0x115C0}, {0x115DC, 0x115DD},
  {0x11630, 0x11640}, {0x116AB, 0x116B7}, {0x1171D, 0x1172B}, {0x1182C, 0x1183A}, {0x11930, 0x11935},
  {0x11937, 0x11938}, {0x1193B, 0x1193E}, {0x11940, 0x11940}, {0x11942, 0x11943}, {0x119D1, 0x119D7},
  {0x119DA, 0x119E0}, {0x119E4, 0x119E4}, {0x11A01, 0x11A0A}, {0x11A33, 0x11A39}, {0x11A3B, 0x11A3E},
  {0x11A47, 0x11A47}, {0x11A51, 0x11A5B}, {0x11A8A, 0x11A99}, {0x11C2F, 0x11C36}, {0x11C38, 0x11C3F},
  {0x11C92, 0x11CA7}, {0x11CA9, 0x11CB6}, {0x11D31, 0x11D36}, {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D},
  {0x11D3F, 0x11D45}, {0x11D47, 0x11D47}, {0x11D8A, 0x11D8E}, {0x11D90, 0x11D91}, {0x11D93, 0x11D97},
  {0x11EF3, 0x11EF6}, {0x16AF0, 0x16AF4}, {0x16B30, 0x16B36}, {0x16F4F, 0x16F4F}, {0x16F51, 0x16F87},
  {0x16F8F, 0x16F92}, {0x16FE4, 0x16FE4}, {0x16FF0, 0x16FF1}, {0x1BC9D, 0x1BC9E}, {0x1CF00, 0x1CF2D},
  {0x1CF30, 0x1CF46}, {0x1D165, 0x1D169}, {0x1D16D, 0x1D172}, {0x1D17B, 0x1D182}, {0x1D185, 0x1D18B},
  {0x1D1AA, 0x1D1AD}, {0x1D242, 0x1D244}, {0x1DA00, 0x1DA36}, {0x1DA3B, 0x1DA6C}, {0x1DA75, 0x1DA75},
  {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F}, {0x1DAA1, 0x1DAAF}, {0x1E000, 0x1E006}, {0x1E008, 0x1E018},
  {0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE},
  {0x1E2EC, 0x1E2EF}, {0x1E8D0, 0x1E8D6}, {0x1E944, 0x1E94A}, {0xE0100, 0xE01EF},
};

int cjk_is_extender(unsigned cp) {
  int lo = 0, hi = (int)(sizeof(aMark) / sizeof(aMark[0])) - 1;
  if (cp == 0x200D) return 1;                      /* zero-width joiner */
  if (cp >= 0x1F3FB && cp <= 0x1F3FF) return 1;    /* emoji skin-tone modifiers */
  if (cp >= 0xE0020 && cp <= 0xE007F) return 1;    /* emoji tag characters */
  /* the half-width voiced sound marks (Lm): the tokenizer reads ｶﾞ as one ガ */
  if (cp == 0xFF9E || cp == 0xFF9F) return 1;
  /* Hangul vowel and final jamo (Lo): with the jamo before them, one syllable (NFD text) */
  if ((cp >= 0x1160 && cp <= 0x11FF) || (cp >= 0xD7B0 && cp <= 0xD7FF)) return 1;
  if (cp < aMark[0][0]) return 0;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (cp < aMark[mid][0]) hi = mid - 1;
    else if (cp > aMark[mid][1]) lo = mid + 1;
    else return 1;
  }
  return 0;
}

/* ---- the chooser ---------------------------------------------------------- */

/* What the edge phases share.  Characters [iFirst, iEnd) of the text are
** decoded in aCp; outside them regionCp answers CJK_BADCHAR, a character that
** is neither space, word, terminator nor extender. */
typedef struct Snip {
  const unsigned *aCp;
  int iFirst, iEnd;
  /* The text is read only as far as the phases need (snipLead, snipScan).
  ** iFirstNonSpace is exact (nChar for an all-space text).  nChar and
  ** iLastNonSpaceEnd (0 for an all-space text) are exact when the text ends
  ** within what was read; otherwise they are lower bounds above every
  ** position the phases compare them with, so each comparison comes out as
  ** it would with the exact values. */
  int nChar;
  int iFirstNonSpace, iLastNonSpaceEnd;
  long long W;                         /* budget */
  long long first, lastEnd;            /* the focus: [first, lastEnd), lastEnd <= first + W */
  int firstByte;                       /* a byte of the character first, or -1 (CjkSnipHit.iByte) */
} Snip;

static unsigned regionCp(const Snip *p, long long c) {
  if (c < p->iFirst || c >= p->iEnd) return CJK_BADCHAR;
  return p->aCp[c - p->iFirst];
}

static int isSpaceAt(const Snip *p, long long c) { return cjk_space_cp(regionCp(p, c)); }

/* Would an edge at c cut a word in two? */
static int cutsWord(const Snip *p, long long c) {
  return c > 0 && isWordCp(regionCp(p, c - 1)) && isWordCp(regionCp(p, c));
}

/* Can a snippet start (or end) at character position c? */
static int isBoundary(const Snip *p, long long c) {
  unsigned prev;
  if (c <= 0 || c >= p->nChar) return 1;
  prev = regionCp(p, c - 1);
  if (prev >= 0x80) return isTermCp(prev); /* the edge phases ask this of every character in reach */
  if (prev == '.' || prev == '!' || prev == '?' || prev == ';') return isSpaceAt(p, c);
  return prev == '\n' || prev == '\r';
}

/* Would an edge at c split a character from what extends it?  White space
** joins nothing: an extender after it, or a joiner before it, is alone. */
static int insideCluster(const Snip *p, long long c) {
  unsigned prev, cp;
  if (c <= 0 || c >= p->nChar) return 0;
  prev = regionCp(p, c - 1);
  cp = regionCp(p, c);
  if (cjk_space_cp(prev) || cjk_space_cp(cp)) return 0;
  return cjk_is_extender(cp) || prev == 0x200D;
}

/* iFirstNonSpace, reading the text up to it (the focus of a text without
** matches starts there); snipScan measures the rest. */
static void snipLead(const unsigned char *z, int n, Snip *p) {
  int b = 0, u = 0;
  while (b < n) {
    unsigned cp;
    int bNext = cjk_utf8_step(z, n, b, &cp);
    if (!cjk_space_cp(cp)) break;
    b = bNext;
    u++;
  }
  p->iFirstNonSpace = u;
}

static int cmpHit(const void *a, const void *b) {
  const CjkSnipHit *x = (const CjkSnipHit *)a, *y = (const CjkSnipHit *)b;
  if (x->iStart != y->iStart) return (x->iStart > y->iStart) - (x->iStart < y->iStart);
  if (x->iEnd != y->iEnd) return (x->iEnd > y->iEnd) - (x->iEnd < y->iEnd);
  return (x->iPhrase > y->iPhrase) - (x->iPhrase < y->iPhrase);
}

/* Sort the matches and merge overlapping or touching ones into aRange. */
static void snipMerge(CjkSnipWork *w) {
  int i;
  w->nRange = 0;
  if (w->nHit <= 0) return;
  qsort(w->aHit, (size_t)w->nHit, sizeof(CjkSnipHit), cmpHit);
  for (i = 0; i < w->nHit; i++) {
    CjkSnipHit *h = &w->aHit[i];
    CjkSnipRange *pLast = w->nRange > 0 ? &w->aRange[w->nRange - 1] : 0;
    if (h->iEnd < h->iStart) h->iEnd = h->iStart;
    if (pLast && h->iStart <= pLast->iEnd) {
      if (h->iEnd > pLast->iEnd) pLast->iEnd = h->iEnd;
    } else {
      w->aRange[w->nRange].iStart = h->iStart;
      w->aRange[w->nRange].iEnd = h->iEnd;
      w->nRange++;
    }
    h->iRange = w->nRange - 1;
  }
}

/* The focus: of the W-wide stretches starting at a highlight, the one whose
** highlights shown whole hold the most distinct phrases, then the most
** matches, the earliest on ties; [first, lastEnd) spans those highlights, or
** the first W characters of one longer than W.  A highlight the stretch would
** cut does not count for it, so one that fits in W is never cut for the sake
** of another beside it.  The highlights are disjoint and sorted, so their
** ends grow with their starts and one pass slides the stretch over them; the
** matches of highlight r are the run of aHit whose iRange is r. */
static void snipFocus(const CjkSnipWork *w, Snip *p) {
  int r, rEnd = 0, h = 0, hEnd = 0, nDistinct = 0, rBest = 0, rBestEnd = 0, hBest = 0;
  long long bestScore = -1;
  p->firstByte = -1;
  if (w->nHit <= 0) {
    p->first = p->lastEnd = p->iFirstNonSpace;
    return;
  }
  memset(w->aCnt, 0, sizeof(int) * (size_t)(w->nPhrase > 0 ? w->nPhrase : 0));
  for (r = 0; r < w->nRange; r++) {
    long long end = (long long)w->aRange[r].iStart + p->W, score;
    while (rEnd < w->nRange && w->aRange[rEnd].iEnd <= end) { /* whole in this stretch */
      for (; hEnd < w->nHit && w->aHit[hEnd].iRange == rEnd; hEnd++) {
        if (w->aCnt[w->aHit[hEnd].iPhrase]++ == 0) nDistinct++;
      }
      rEnd++;
    }
    score = (long long)nDistinct * ((long long)w->nHit + 1) + (hEnd - h);
    if (score > bestScore) {
      bestScore = score;
      rBest = r;
      rBestEnd = rEnd;
      hBest = h;
    }
    for (; h < w->nHit && w->aHit[h].iRange == r; h++) { /* highlight r leaves the stretch */
      if (h < hEnd && --w->aCnt[w->aHit[h].iPhrase] == 0) nDistinct--;
    }
    if (rEnd <= r) { /* r was longer than W, never counted: the next stretch starts empty */
      rEnd = r + 1;
      hEnd = h;
    }
  }
  p->first = w->aRange[rBest].iStart;
  p->firstByte = w->aHit[hBest].iByte; /* the highlight's first match starts where it does */
  p->lastEnd = rBestEnd > rBest ? w->aRange[rBestEnd - 1].iEnd : w->aRange[rBest].iEnd;
  if (p->lastEnd > p->first + p->W) p->lastEnd = p->first + p->W;
}

int cjk_snip_region_size(long long nMax, int nChar) {
  long long r = 2 * nMax + 3;
  return r > (long long)nChar ? nChar : (int)r;
}

/* Where snipScan may start reading instead of the text's start: byte *pb,
** the first of character *pu <= rs, found by going back from the focus's
** byte.  Every byte that is not a continuation byte (10xxxxxx) starts a
** character as the strict reading splits the text (no malformed sequence
** takes one in), so after going back over first - rs + 1 of them, reading
** forward to the focus counts the characters in between exactly, and there
** are at least first - rs.  Returns 0 (read from the start) when the focus's
** byte is unknown or the way back reaches the text's start. */
static int snipAnchor(const unsigned char *z, int n, const Snip *p, long long rs, int *pb, int *pu) {
  long long want = p->first - rs + 1, k = 0, u = 0;
  int b = p->firstByte, i;
  if (b < 0 || b >= n || rs <= 0) return 0;
  while (b > 0 && k < want) {
    b--;
    if ((z[b] & 0xC0) != 0x80) k++;
  }
  if (k < want) return 0;
  for (i = b;; u++) { /* up to the character holding firstByte, which is character first */
    unsigned cp;
    int j = cjk_ascii_end(z, i, p->firstByte), n3 = 0; /* the fast paths stop before firstByte */
    u += j - i;
    i = cjk_utf8_run3(z, j, p->firstByte, &n3);
    u += n3;
    j = cjk_utf8_step(z, n, i, &cp);
    if (j > p->firstByte) break;
    i = j;
  }
  *pb = b;
  *pu = (int)(p->first - u);
  return 1;
}

/* Decode characters [first - W - 1, first + W + 2) into aCp/aOff (every
** edge phase looks only there: an edge is within W of the focus, and looks
** one character beyond it), and measure the text on the way.  Past the
** region the scan goes on only to a non-space character beyond "need": the
** region's end, iFirstNonSpace + W (whether the trimmed text fits in W) and
** the most room a region takes (2W + 3, the work-space check).  When the
** text goes on after it, nChar and iLastNonSpaceEnd are lower bounds beyond
** all three, which is all the phases ask of them; a long text is not read
** to its end.  Nor from its start, when the focus's byte is known
** (snipAnchor). */
static void snipScan(const unsigned char *z, int n, const CjkSnipWork *w, Snip *p) {
  long long rs = p->first - p->W - 1, re = p->first + p->W + 2, need = 2 * p->W + 3;
  int u = 0, b = 0, c = 0, bEnd = -1, last = 0, bAnchor;
  if (rs < 0) rs = 0;
  if (re - rs > w->nRegionAlloc) re = rs + w->nRegionAlloc; /* never: the caller sized it */
  if (re < rs) re = rs;
  if (need < re) need = re;
  if (need < p->iFirstNonSpace + p->W) need = p->iFirstNonSpace + p->W;
  for (bAnchor = snipAnchor(z, n, p, rs, &b, &u);; bAnchor = 0, b = u = c = 0, bEnd = -1) {
    /* three loops, one per stretch: before the region, the region (stored),
    ** after it (up to need); u > need only after the region (need >= re) */
    while (b < n && u < rs) {
      unsigned cp;
      b = cjk_utf8_step(z, n, b, &cp);
      u++;
      if (!cjk_space_cp(cp)) last = u;
    }
    while (b < n && u < re) {
      unsigned cp;
      int bNext = cjk_utf8_step(z, n, b, &cp);
      w->aCp[c] = cp;
      w->aOff[c] = b;
      c++;
      b = bNext;
      u++;
      if (!cjk_space_cp(cp)) last = u;
    }
    if (u == re && b < n) bEnd = b;
    while (b < n) {
      unsigned cp;
      b = cjk_utf8_step(z, n, b, &cp);
      u++;
      if (!cjk_space_cp(cp)) {
        last = u;
        if (u > need) break;
      }
    }
    /* Read from an anchor, "last" is exact when it saw non-space text; if
    ** not, it was before the anchor: read again from the start. */
    if (!bAnchor || last > 0) break;
  }
  w->aOff[c] = bEnd < 0 ? b : bEnd;
  p->aCp = w->aCp;
  p->iFirst = (int)rs;
  p->iEnd = (int)rs + c;
  p->nChar = b < n ? u + 1 : u;
  p->iLastNonSpaceEnd = last;
}

/* The start: the whole text's start when it fits, else the sentence start
** nearest to centring the focus, else the centred start moved off a word. */
static long long snipStart(const Snip *p) {
  long long slack = p->W - (p->lastEnd - p->first), target, lo, c, ws = -1, bestDist = -1;
  if (slack < 0) slack = 0;
  target = p->first - slack / 2;
  /* the text trimmed of white space fits, with the focus (a match of white space may lie outside it) */
  if ((p->iLastNonSpaceEnd > p->lastEnd ? p->iLastNonSpaceEnd : p->lastEnd) -
          (p->iFirstNonSpace < p->first ? p->iFirstNonSpace : p->first) <= p->W) {
    ws = p->iFirstNonSpace < p->first ? p->iFirstNonSpace : p->first;
  } else {
    lo = p->lastEnd - (3 * p->W) / 4;
    if (lo < 0) lo = 0;
    for (c = p->first; c >= lo; c--) {
      long long dist;
      if (!isBoundary(p, c)) continue;
      dist = c > target ? c - target : target - c;
      if (bestDist < 0 || dist <= bestDist) {
        bestDist = dist;
        ws = c;
      }
    }
    if (ws < 0) {
      ws = target < 0 ? 0 : target;
      if (cutsWord(p, ws)) {
        for (c = ws + 1; c <= p->first; c++) {
          if (isSpaceAt(p, c - 1)) {
            ws = c;
            break;
          }
        }
      }
      for (c = ws; c < p->first && cutsWord(p, c); c++) {
      }
      if (c < p->first) ws = c; /* no space before the focus: after the cut word, unless the match is in it */
    }
  }
  while (ws < p->first && isSpaceAt(p, ws)) ws++;
  return ws;
}

/* The end: W after the start, cut back to a sentence end in the second half
** (never before the focus's end), else off a word; trailing space trimmed. */
static long long snipEnd(const Snip *p, long long ws) {
  long long we = ws + p->W, c;
  if (we > p->nChar) we = p->nChar;
  if (we < p->lastEnd) we = p->lastEnd;
  if (we < p->iLastNonSpaceEnd) {
    long long minEnd = ws + p->W / 2;
    int bFound = 0;
    if (minEnd < p->lastEnd) minEnd = p->lastEnd;
    for (c = we; c >= minEnd && c > ws; c--) {
      if (isBoundary(p, c)) {
        we = c;
        bFound = 1;
        break;
      }
    }
    if (!bFound && cutsWord(p, we)) {
      for (c = we - 1; c >= minEnd && c > ws; c--) {
        if (isSpaceAt(p, c)) {
          we = c;
          break;
        }
      }
      for (c = we; c > p->lastEnd && cutsWord(p, c); c--) {
      }
      if (c > p->lastEnd) we = c; /* no space in reach: before the cut word, unless the match is in it */
    }
  }
  while (we > ws && we > p->lastEnd && isSpaceAt(p, we - 1)) we--;
  return we;
}

/* Characters the end gave back go to the start: to the earliest sentence
** start still in budget, or (when the start is not one already) as far as the
** budget goes without cutting a word. */
static long long snipGiveBack(const Snip *p, long long ws, long long we) {
  long long lo = we - p->W, c, c2 = -1;
  if (we - ws >= p->W || ws <= p->iFirstNonSpace) return ws;
  if (lo < 0) lo = 0;
  if (lo < p->iFirst) lo = p->iFirst;
  for (c = lo; c < ws; c++) {
    if (isBoundary(p, c)) {
      c2 = c;
      break;
    }
  }
  if (c2 < 0 && !isBoundary(p, ws) && lo < ws) {
    c2 = lo;
    if (cutsWord(p, c2)) {
      for (c = c2 + 1; c <= ws; c++) {
        if (isSpaceAt(p, c - 1)) break;
      }
      c2 = c > ws ? ws : c;
    }
  }
  if (c2 >= 0 && c2 < ws) {
    ws = c2;
    while (ws < p->first && isSpaceAt(p, ws)) ws++;
  }
  return ws;
}

/* Is c strictly inside a highlight outside the focus? */
static int insideOtherHighlight(const Snip *p, const CjkSnipWork *w, long long c) {
  int r;
  for (r = 0; r < w->nRange; r++) {
    long long s = w->aRange[r].iStart, e = w->aRange[r].iEnd;
    if (s < c && c < e && (e <= p->first || s >= p->lastEnd)) return 1;
  }
  return 0;
}

/* Keep every character with what extends it: edges move inward (and off the
** white space that may uncover), or outward when the focus itself starts or
** ends inside a cluster: to the cluster's edge, when the budget allows and it
** is not inside another highlight; else the edge stays at the focus. */
static void snipClusters(const Snip *p, const CjkSnipWork *w, long long *pWs, long long *pWe) {
  long long ws = *pWs, we = *pWe, grow;
  while (ws < p->first && (insideCluster(p, ws) || isSpaceAt(p, ws))) ws++;
  while (we > p->lastEnd && we > ws && (insideCluster(p, we) || isSpaceAt(p, we - 1))) we--;
  for (grow = ws; insideCluster(p, grow) && grow > p->iFirst && we - grow < p->W; grow--) {
  }
  if (!insideCluster(p, grow) && !insideOtherHighlight(p, w, grow)) ws = grow;
  for (grow = we; insideCluster(p, grow) && grow < p->iEnd && grow - ws < p->W; grow++) {
  }
  if (!insideCluster(p, grow) && !insideOtherHighlight(p, w, grow)) we = grow;
  *pWs = ws;
  *pWe = we;
}

/* Edges off the highlights outside the focus: an edge inside one moves to
** the side away from the focus, so no highlight shows in part (the focus's
** own are whole already, or a longer one is cut at its W-th character). */
static void snipOffHighlights(const Snip *p, const CjkSnipWork *w, long long *pWs, long long *pWe) {
  int r;
  for (r = 0; r < w->nRange; r++) {
    long long s = w->aRange[r].iStart, e = w->aRange[r].iEnd;
    if (s < *pWs && *pWs < e && e <= p->first) *pWs = e;
    if (s < *pWe && *pWe < e && s >= p->lastEnd) *pWe = s;
  }
  while (*pWs < p->first && isSpaceAt(p, *pWs)) (*pWs)++;
  while (*pWe > p->lastEnd && *pWe > *pWs && isSpaceAt(p, *pWe - 1)) (*pWe)--;
}

/* The window's edges, from the focus and the decoded region. */
static void snipEdges(const Snip *p, const CjkSnipWork *w, CjkSnipWindow *pOut) {
  long long ws, we;
  int r;
  ws = snipStart(p);
  we = snipEnd(p, ws);
  ws = snipGiveBack(p, ws, we);
  snipOffHighlights(p, w, &ws, &we);
  snipClusters(p, w, &ws, &we);
  if (ws < p->iFirst) ws = p->iFirst;
  if (we > p->iEnd) we = p->iEnd;
  if (we < ws) we = ws;
  pOut->iStart = (int)ws;
  pOut->iEnd = (int)we;
  pOut->bCutBefore = ws > p->iFirstNonSpace;
  pOut->bCutAfter = we < p->iLastNonSpaceEnd;
  pOut->iRegion = p->iFirst;
  for (r = 0; r < w->nRange && w->aRange[r].iEnd <= ws; r++) {
  }
  pOut->iFirstShown = (r < w->nRange && w->aRange[r].iStart < we) ? r : -1;
}

int cjk_snip_choose(const unsigned char *z, int n, long long nMax, CjkSnipWork *w, CjkSnipWindow *pOut) {
  Snip s;
  int i;
  memset(&s, 0, sizeof(s));
  s.W = nMax < 1 ? 1 : nMax;
  for (i = 0; i < w->nHit; i++) {
    if (w->aHit[i].iPhrase < 0 || w->aHit[i].iPhrase >= w->nPhrase) return 1;
  }
  snipLead(z, n, &s);
  snipMerge(w);
  snipFocus(w, &s);
  snipScan(z, n, w, &s);
  if (cjk_snip_region_size(s.W, s.nChar) > w->nRegionAlloc) return 1;
  snipEdges(&s, w, pOut);
  return 0;
}

/* ---- the helper Python calls ---------------------------------------------- */

/* Work space layout: aHit[nMatch], aRange[nMatch], aCnt[nPhrase],
** aCp[region], aOff[region + 1]; every member is made of ints. */
size_t cjk_snippet_work_size(int nMatch, int nPhrase, int nMax, int nChar) {
  size_t nRegion;
  if (nMatch < 0 || nPhrase < 0 || nMax < 1 || nChar < 0) return 0;
  nRegion = (size_t)cjk_snip_region_size(nMax, nChar);
  return sizeof(CjkSnipHit) * (size_t)nMatch + sizeof(CjkSnipRange) * (size_t)nMatch +
         sizeof(int) * (size_t)nPhrase + sizeof(unsigned) * nRegion + sizeof(int) * (nRegion + 1);
}

int cjk_snippet_window(const char *z, int n, int nChar, const int *aMatch, int nMatch, int nPhrase,
                       int nMax, void *pWork, size_t nWork, int *aOut) {
  CjkSnipWork w;
  CjkSnipWindow win;
  char *p = (char *)pWork;
  int i;
  size_t nNeed = cjk_snippet_work_size(nMatch, nPhrase, nMax, nChar);
  if (!z || n < 0 || !aOut || !pWork || nNeed == 0 || nWork < nNeed || (nMatch > 0 && !aMatch)) return -1;
  w.aHit = (CjkSnipHit *)p;
  p += sizeof(CjkSnipHit) * (size_t)nMatch;
  w.aRange = (CjkSnipRange *)p;
  p += sizeof(CjkSnipRange) * (size_t)nMatch;
  w.aCnt = (int *)p;
  p += sizeof(int) * (size_t)nPhrase;
  w.nRegionAlloc = cjk_snip_region_size(nMax, nChar);
  w.aCp = (unsigned *)p;
  p += sizeof(unsigned) * (size_t)w.nRegionAlloc;
  w.aOff = (int *)p;
  w.nHit = nMatch;
  w.nPhrase = nPhrase;
  for (i = 0; i < nMatch; i++) {
    int s = aMatch[3 * i], e = aMatch[3 * i + 1];
    if (s < 0 || e < s || e > nChar) return -1;
    w.aHit[i].iStart = s;
    w.aHit[i].iEnd = e;
    w.aHit[i].iPhrase = aMatch[3 * i + 2];
    w.aHit[i].iByte = -1;
    w.aHit[i].iRange = -1;
  }
  if (cjk_snip_choose((const unsigned char *)z, n, nMax, &w, &win) != 0) return -1;
  aOut[0] = win.iStart;
  aOut[1] = win.iEnd;
  aOut[2] = win.bCutBefore;
  aOut[3] = win.bCutAfter;
  aOut[4] = win.iFirstShown < 0 ? -1 : w.aRange[win.iFirstShown].iStart;
  aOut[5] = win.iFirstShown < 0 ? -1 : w.aRange[win.iFirstShown].iEnd;
  return 0;
}
