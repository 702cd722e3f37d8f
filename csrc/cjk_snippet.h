/*
** cjk_snippet.h — the one snippet rule: which part of a text a snippet shows.
**
** Every snippet the project makes comes from here: cjk_match() (cjk_aux.c)
** on the cjk route, and, through cjk_snippet_window() and the cffi module,
** snippet.py on every route that checks rows in Python and session_search.
**
** The rule.  Input: a text, its matches (character ranges, each with the
** query phrase it belongs to) and a budget of W characters (ellipses not
** counted).  Matches that overlap or touch are merged into one highlight.
** The focus is the W-wide stretch, starting at a highlight, whose highlights
** shown whole hold the most distinct phrases, then the most matches, the
** earliest on ties: a highlight that fits in W is never cut (a longer one
** shows its first W characters).
** If the text, trimmed of white space, fits in W it is shown whole.
** Otherwise the start moves back to a sentence start when one lies within
** three quarters of a window of the focus's end, choosing the one nearest to
** centring the focus; failing that the focus is centred and a word of a
** spaced script (Latin, Cyrillic, digits ...; not Thai, Lao, Tibetan,
** Myanmar, Khmer or emoji, which have no spaces to cut at) is not cut in two: the start
** moves after it (unless the focus starts inside it).  A sentence
** starts at the text start and after 。！？；｡ (full-width forms too), a
** newline (or CR, U+2028, U+2029); after ASCII . ! ? ; only when white space
** follows ("settings.yaml" and "a!=b" are no sentence ends).  The end is cut
** back to the last sentence end in the window's second half (never before
** the focus), else, if it would cut a word, to the last white space there,
** or before the word (unless the focus ends inside it).
** Characters the end gave back extend the start to the earliest sentence
** start still in budget (or, if the start is not at one, as far as the budget
** goes without cutting a word).  An edge inside a highlight other than the
** focus's moves off it, away from the focus: no highlight shows in part.
** White space at either edge is trimmed.  A
** character is never split from what extends it: a window edge does not fall
** before a combining mark (General Category M, variation selectors included),
** a half-width voiced sound mark (U+FF9E, U+FF9F: ｶﾞ reads as ガ), a Hangul
** vowel or final jamo (U+1160..U+11FF, U+D7B0..U+D7FF: a syllable of NFD
** text), an emoji skin-tone modifier or tag, nor after a zero-width joiner -- the
** edge moves inward, or outward when the focus itself starts or ends there,
** to the cluster's edge, when the budget allows and that edge is not inside
** another highlight (else it stays at the focus).  White space joins
** nothing: an edge may fall after it before an extender, or after a joiner
** before it.  An ellipsis marks each side where non-space text
** was left out.  The first highlight inside the window is "the" highlight
** (clipped to the window); its full range in the text is the hit's span.
** Characters are code points of the text read as UTF-8, each maximal invalid
** byte sequence counting as one U+FFFD.
*/
#ifndef CJK_SNIPPET_H
#define CJK_SNIPPET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cjk_api.h"

/* A strictly decoded character that was not valid UTF-8 (printed as U+FFFD). */
#define CJK_BADCHAR 0x110000u

/* One match: characters [iStart, iEnd) of phrase iPhrase.  iByte is a byte
** offset inside the character iStart (its first byte, as a rule), or -1 when
** the caller does not know it; knowing it spares the chooser reading the text
** from its start.  iRange is set by the chooser to the merged highlight the
** match belongs to. */
typedef struct CjkSnipHit {
  int iPhrase;
  int iStart, iEnd;
  int iByte;
  int iRange;
} CjkSnipHit;

typedef struct CjkSnipRange {
  int iStart, iEnd; /* characters, [iStart, iEnd) */
} CjkSnipRange;

/* The chooser's memory, all of it provided by the caller (so the SQLite
** function allocates through its host and Python through cffi). */
typedef struct CjkSnipWork {
  CjkSnipHit *aHit;     /* in: nHit matches (sorted in place) */
  int nHit;
  CjkSnipRange *aRange; /* out: merged highlights, sorted; room for nHit */
  int nRange;
  int *aCnt;            /* scratch: one int per phrase */
  int nPhrase;
  unsigned *aCp;        /* out: the decoded characters around the window */
  int *aOff;            /* out: their byte offsets, one more entry than aCp */
  int nRegionAlloc;     /* room in aCp (aOff has one more) */
} CjkSnipWork;

/* Where the snippet lies: characters [iStart, iEnd) of the text. */
typedef struct CjkSnipWindow {
  int iStart, iEnd;
  int bCutBefore, bCutAfter; /* non-space text left out before / after */
  int iFirstShown;           /* aRange index of the first highlight shown, or -1 */
  int iRegion;               /* character number of aCp[0] and aOff[0] */
} CjkSnipWindow;

/* Room the chooser needs in aCp for a budget of nMax characters on a text of
** nChar characters. */
int cjk_snip_region_size(long long nMax, int nChar);

/* Choose the window for z[0..n) by the rule above; nMax is W.  Returns 0, or
** non-zero when the work space is too small or a phrase is out of range. */
int cjk_snip_choose(const unsigned char *z, int n, long long nMax, CjkSnipWork *w, CjkSnipWindow *pOut);

/* Decode one character at z[i] (i < n) as Unicode's well-formed UTF-8 table
** defines it; a malformed sequence yields CJK_BADCHAR for its maximal valid
** prefix (at least one byte), as Python's "replace" error handler splits
** invalid input.  Returns the next index. */
int cjk_utf8_strict(const unsigned char *z, int n, int i, unsigned *pCp);

/* White space, as the snippet rule trims it. */
int cjk_snip_is_space(unsigned cp);

/* Does z[i..n) start with a well-formed three-byte character other than the
** two lead bytes with a narrower second-byte range (E0, ED)?  CJK, kana and
** Hangul are all here; cjk_utf8_step reads one as one character (i < n). */
CJK_INLINE int cjk_utf8_is3(const unsigned char *z, int n, int i) {
  return z[i] >= 0xE1 && z[i] <= 0xEF && z[i] != 0xED && i + 2 < n && (z[i + 1] & 0xC0) == 0x80 &&
         (z[i + 2] & 0xC0) == 0x80;
}

/* cjk_utf8_run3 tests eight characters (24 bytes) at a time where the byte
** order of a 64-bit word is known (byte k is bits 8k..8k+7): w holds eight of
** those bytes, the lead bytes where lm has 0xFF.  Each lead byte must be
** 1110xxxx other than E0 and ED, each other byte 10xxxxxx: the masked compare
** tests the top bits, and the zero-byte test (exact as a yes/no: some byte of
** y is zero) finds an E0 or ED lead. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CJK_RUN3_WORDS 1
CJK_INLINE int cjk_run3_word(uint64_t w, uint64_t lm) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t cm = ~lm, y;
  if ((w & ((lm & 0xF0F0F0F0F0F0F0F0ull) | (cm & 0xC0C0C0C0C0C0C0C0ull))) !=
      ((lm & 0xE0E0E0E0E0E0E0E0ull) | (cm & highs))) {
    return 0;
  }
  y = w ^ (lm & 0xE0E0E0E0E0E0E0E0ull); /* other bytes stay 80..BF: non-zero */
  if ((y - ones) & ~y & highs) return 0;
  y = w ^ (lm & 0xEDEDEDEDEDEDEDEDull);
  return ((y - ones) & ~y & highs) == 0;
}
#endif

/* Where the run of characters cjk_utf8_is3 accepts, from z[i] on within
** z[0..n), ends; *pu grows by their number.  The byte -> character count
** crosses long runs of CJK text, where testing 24 bytes in three words
** costs a fraction of testing eight characters one by one. */
CJK_INLINE int cjk_utf8_run3(const unsigned char *z, int i, int n, int *pu) {
#ifdef CJK_RUN3_WORDS
  while (i <= n - 24) {
    uint64_t a, b, c;
    memcpy(&a, z + i, 8); /* no alignment or aliasing assumption */
    memcpy(&b, z + i + 8, 8);
    memcpy(&c, z + i + 16, 8);
    /* lead bytes at 0, 3, 6 | 9, 12, 15 | 18, 21 */
    if (!cjk_run3_word(a, 0x00FF0000FF0000FFull) || !cjk_run3_word(b, 0xFF0000FF0000FF00ull) ||
        !cjk_run3_word(c, 0x0000FF0000FF0000ull)) {
      break;
    }
    i += 24;
    *pu += 8;
  }
#endif
  while (i < n && cjk_utf8_is3(z, n, i)) {
    i += 3;
    (*pu)++;
  }
  return i;
}

/* The common cases of cjk_utf8_strict and cjk_snip_is_space, inline: the
** scans over a whole text (measuring it, decoding up to the window, byte ->
** character offsets) meet mostly ASCII and three-byte characters, and a call
** per character was most of their cost.  Same results as the functions they
** stand for. */
CJK_INLINE int cjk_utf8_step(const unsigned char *z, int n, int i, unsigned *pCp) {
  unsigned c = z[i];
  if (c < 0x80) {
    *pCp = c;
    return i + 1;
  }
  if (cjk_utf8_is3(z, n, i)) {
    *pCp = ((c & 0x0Fu) << 12) | ((z[i + 1] & 0x3Fu) << 6) | (z[i + 2] & 0x3Fu);
    return i + 3;
  }
  return cjk_utf8_strict(z, n, i, pCp);
}

CJK_INLINE int cjk_space_cp(unsigned cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  if (cp > 0x3000) return 0; /* U+3000 is the last space: no CJK letter is one */
  return cjk_snip_is_space(cp);
}

/* Non-zero if cp extends the character before it (see the rule above). */
CJK_API int cjk_is_extender(unsigned cp);

/* For Python (snippet.py): the bytes of work space cjk_snippet_window needs. */
CJK_API size_t cjk_snippet_work_size(int nMatch, int nPhrase, int nMax, int nChar);

/* For Python: the window of the UTF-8 text z[0..n) holding nChar characters,
** for nMatch matches aMatch[3*i .. 3*i+2] = (start, end, phrase), characters,
** phrases 0..nPhrase-1, with a budget of nMax characters.  pWork holds
** nWork >= cjk_snippet_work_size(...) bytes, aligned for int.  aOut gets six
** ints: window start, end, cut before, cut after, and the first highlight
** shown as start, end in the text (-1, -1 when none).  Returns 0, or -1 for
** bad arguments. */
CJK_API int cjk_snippet_window(const char *z, int n, int nChar, const int *aMatch, int nMatch, int nPhrase,
                               int nMax, void *pWork, size_t nWork, int *aOut);

#endif /* CJK_SNIPPET_H */
