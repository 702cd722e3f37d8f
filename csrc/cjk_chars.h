/*
** cjk_chars.h — the one definition of "what is CJK" and of width folding.
**
** The FTS5 tokenizer, the auxiliary function and the Python query router all
** ask these functions (Python through the cffi module); nobody keeps a copy.
*/
#ifndef CJK_CHARS_H
#define CJK_CHARS_H

#include <stdint.h>
#include <string.h>

#include "cjk_api.h"

/* Decode one character at z[i] (i < n) the way SQLite's unicode61 reads UTF-8,
** so our segment boundaries fall on the character boundaries unicode61 sees:
** a lead byte >= 0xC0 swallows every continuation byte after it, but for a
** CJK letter or a variation selector, which ends where its own bytes do (a
** stray continuation byte after it is a malformed character of its own).  Returns the
** index just past the character.  *pCp gets the code point, or 0xFFFD when the
** sequence is malformed (overlong, surrogate, > U+10FFFF, U+FFFE/U+FFFF,
** stray continuation byte, wrong length).  Never reads z[n] or beyond.
** cjk_utf8_decode() is the whole definition; cjk_utf8_next() takes ASCII and
** a well-formed three-byte character (CJK, kana, Hangul) inline, with the same
** results, since the tokenizer calls it for every character. */
int cjk_utf8_decode(const unsigned char *z, int n, int i, unsigned *pCp);

CJK_INLINE int cjk_utf8_next(const unsigned char *z, int n, int i, unsigned *pCp) {
  unsigned c = z[i], cp;
  if (c < 0x80) {
    *pCp = c;
    return i + 1;
  }
  /* Lead E1..EF but ED (whose second byte could make a surrogate), exactly
  ** two continuation bytes: no overlong form, no surrogate, <= U+FFFF. */
  if (c >= 0xE1 && c != 0xED && c <= 0xEF && i + 2 < n && (z[i + 1] & 0xC0) == 0x80 &&
      (z[i + 2] & 0xC0) == 0x80 && (i + 3 >= n || (z[i + 3] & 0xC0) != 0x80)) {
    cp = ((c & 0x0Fu) << 12) | ((z[i + 1] & 0x3Fu) << 6) | (z[i + 2] & 0x3Fu);
    if ((cp & 0xFFFEu) != 0xFFFEu) {
      *pCp = cp;
      return i + 3;
    }
  }
  return cjk_utf8_decode(z, n, i, pCp);
}

/* The first index >= i of z[0..n) holding a byte >= 0x80, or n: where the
** ASCII at z[i] ends.  Eight bytes at a time, since the scans that call it
** (the tokenizer's search for CJK, cjk_match's byte -> character count) mostly
** cross long ASCII stretches: code, logs, English. */
CJK_INLINE int cjk_ascii_end(const unsigned char *z, int i, int n) {
  while (i <= n - 8) {
    uint64_t w;
    memcpy(&w, z + i, 8); /* no alignment or aliasing assumption */
    if (w & 0x8080808080808080ull) break;
    i += 8;
  }
  while (i < n && z[i] < 0x80) i++;
  return i;
}

/* The code point of a "plain" CJK letter at z[i], or 0: a Han ideograph of
** U+4E00..U+9FFF, a Hangul syllable, or a kana of U+3041..U+3096 or
** U+30A1..U+30FA, all three bytes long.  cjk_unicode61 reads one as itself
** (CJK under any options but separators=, which may name it; no width or
** voiced form) when the next character is plain too: then no voiced mark or
** variation selector follows it. */
CJK_INLINE unsigned cjk_plain_at(const unsigned char *z, int n, int i) {
  unsigned cp;
  if (i + 2 >= n || z[i] < 0xE3 || z[i] > 0xED || (z[i + 1] & 0xC0) != 0x80 || (z[i + 2] & 0xC0) != 0x80) return 0;
  cp = ((z[i] & 0x0Fu) << 12) | ((z[i + 1] & 0x3Fu) << 6) | (z[i + 2] & 0x3Fu);
  if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x3041 && cp <= 0x3096) ||
      (cp >= 0x30A1 && cp <= 0x30FA)) {
    return cp;
  }
  return 0;
}

/* Encode cp (<= 0x10FFFF) into out[0..3]; returns the byte count (1..4). */
CJK_INLINE int cjk_utf8_put(unsigned cp, unsigned char *out) {
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | (cp >> 6));
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xE0 | (cp >> 12));
    out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | ((cp >> 18) & 0x07));
  out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Non-zero if code point cp is a CJK letter, i.e. part of a run the tokenizer
** splits into bigrams: Han (URO, Extensions A-I, compatibility ideographs,
** 々〆〇〻, the Hangzhou numerals and 〸〹〺), Hiragana, Katakana (with the
** phonetic extensions, the prolonged sound mark ー, the voiced sound marks,
** the iteration marks ゝゞヽヾ〱..〵, 〼, half-width katakana and the kana
** supplements), Hangul (syllables, jamo, compatibility, extended and
** half-width jamo) and Bopomofo.  CJK punctuation and symbols (、。「」・ …)
** are not CJK letters: they separate runs. */
CJK_API int cjk_is_cjk(unsigned cp);

/* For Python's query router: aOut[i] = 1 if aCp[i] is a CJK letter, else 0.
** Returns how many are.  (Code points, not UTF-8: Python strings hold those.) */
CJK_API int cjk_classify_utf32(const uint32_t *aCp, int n, unsigned char *aOut);

/* The table behind cjk_is_cjk(), for Python and the tests: range i is
** [cjk_range_bound(i,0), cjk_range_bound(i,1)], sorted, inclusive. */
CJK_API int cjk_range_count(void);
CJK_API unsigned cjk_range_bound(int i, int bHigh);

/* Width folding applied to documents and queries alike:
**   full-width ASCII U+FF01..U+FF5E -> U+0021..U+007E (Ｈｅｌｌｏ１ -> Hello1)
**   half-width katakana and Hangul  -> their full-width forms (ｶﾀｶﾅ -> カタカナ)
** Every other code point maps to itself. */
CJK_API unsigned cjk_fold_width(unsigned cp);

/* Voiced sound marks: if base followed by mark (U+3099/U+309A after width
** folding) has a precomposed form (カ+゛ -> ガ), return it, else 0. */
unsigned cjk_compose_voiced(unsigned base, unsigned mark);

/* Non-zero for a variation selector: U+FE00..FE0F or U+E0100..E01EF. */
int cjk_is_variation_selector(unsigned cp);

/* Index just past the variation selectors (none or more) starting at z[j],
** j <= n.  After a CJK letter they belong to it: they neither split the run
** nor count for matching, and the letter's offsets cover them. */
int cjk_skip_variation_selectors(const unsigned char *z, int n, int j);

/* Fold a whole UTF-8 string the way the tokenizer reads CJK text: width
** folding, voiced-mark composition, variation selectors after a CJK letter
** dropped, and with bVariants the Han variant folding of fold_variants 1
** (cjk_variants.h).  Malformed sequences are copied through unchanged.
** Writes at most nOut bytes; returns the length the result needs: never more
** than n when bVariants is 0, never more than CJK_FOLD_MAX(n) otherwise (a
** variant may fold to a 4-byte character from a 3-byte one). */
CJK_API int cjk_fold_utf8(const char *zIn, int n, char *zOut, int nOut, int bVariants);
#define CJK_FOLD_MAX(n) ((n) + (n) / 3 + 1)

#endif /* CJK_CHARS_H */
