/*
** cjk_chars.c — the one definition of "what is CJK", width folding and the
** UTF-8 reader shared by the tokenizer, the auxiliary function and Python.
*/
#include "cjk_chars.h"
#include "cjk_variants.h"

/* Value bits carried by a lead byte 0xC0..0xFF, as SQLite's UTF-8 reader uses
** them (5-, 6- and 7-byte leads keep their low bits too; the result is then
** far above U+10FFFF and treated as malformed). */
static const unsigned char aLeadBits[64] = {
  0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
  0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
  0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
  0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
};

int cjk_utf8_decode(const unsigned char *z, int n, int i, unsigned *pCp) {
  unsigned c = z[i++];
  int nCont = 0, nWant;
  if (c < 0x80) {
    *pCp = c;
    return i;
  }
  if (c < 0xC0) { /* stray continuation byte: one malformed character */
    *pCp = 0xFFFD;
    return i;
  }
  nWant = c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF8 ? 3 : 99;
  c = aLeadBits[c - 0xC0];
  /* Like SQLite: swallow every continuation byte that follows.  Accumulate in
  ** 32 bits only while it cannot overflow; beyond that it is malformed anyway.
  ** But a CJK letter (or a variation selector) ends where its bytes do: a
  ** stray continuation byte after it is a malformed character of its own, as
  ** every other reader of the text (Python, instr() on its bytes) sees it, and
  ** the letter is still indexed. */
  while (i < n && (z[i] & 0xC0) == 0x80) {
    if (nCont == nWant && nWant >= 2 && (cjk_is_cjk(c) || cjk_is_variation_selector(c)) &&
        c >= (nWant == 2 ? 0x800u : 0x10000u) && (c & 0xFFFFF800u) != 0xD800) {
      break; /* a variation selector too: it belongs to the letter before it */
    }
    if (nCont < 4) c = (c << 6) + (z[i] & 0x3F);
    nCont++;
    i++;
  }
  if (nCont != nWant || c > 0x10FFFF || (c & 0xFFFFF800) == 0xD800 ||
      (nWant == 1 && c < 0x80) || (nWant == 2 && c < 0x800) ||
      (nWant == 3 && c < 0x10000) || (c & 0xFFFFFFFE) == 0xFFFE) {
    c = 0xFFFD;
  }
  *pCp = c;
  return i;
}

/* CJK letters, as sorted inclusive ranges.  This table is the definition the
** whole product uses; cjk_tokenizer.cjk_ranges() exposes it to Python. */
static const unsigned aCjkRange[][2] = {
  {0x1100, 0x11FF},   /* Hangul Jamo */
  {0x3005, 0x3007},   /* 々 〆 〇 */
  {0x3021, 0x3029},   /* Hangzhou numerals */
  {0x3031, 0x3035},   /* kana repeat marks 〱..〵 */
  {0x3038, 0x303C},   /* 〸〹〺 〻 〼 */
  {0x3041, 0x3096},   /* Hiragana */
  {0x3099, 0x309F},   /* voiced sound marks, ゝゞ ゟ */
  {0x30A1, 0x30FA},   /* Katakana (not ゠ U+30A0, not ・ U+30FB) */
  {0x30FC, 0x30FF},   /* ー ヽ ヾ ヿ */
  {0x3105, 0x312F},   /* Bopomofo */
  {0x3131, 0x318E},   /* Hangul Compatibility Jamo */
  {0x31A0, 0x31BF},   /* Bopomofo Extended */
  {0x31F0, 0x31FF},   /* Katakana Phonetic Extensions */
  {0x3400, 0x4DBF},   /* CJK Unified Ideographs Extension A */
  {0x4E00, 0x9FFF},   /* CJK Unified Ideographs */
  {0xA960, 0xA97F},   /* Hangul Jamo Extended-A */
  {0xAC00, 0xD7A3},   /* Hangul Syllables */
  {0xD7B0, 0xD7FF},   /* Hangul Jamo Extended-B */
  {0xF900, 0xFAFF},   /* CJK Compatibility Ideographs */
  {0xFF66, 0xFF9F},   /* half-width katakana (folded to full-width) */
  {0xFFA0, 0xFFDC},   /* half-width Hangul (folded to compatibility jamo) */
  {0x1AFF0, 0x1AFFF}, /* Kana Extended-B */
  {0x1B000, 0x1B16F}, /* Kana Supplement, Kana Extended-A, Small Kana Extension */
  {0x20000, 0x2A6DF}, /* Extension B */
  {0x2A700, 0x2EE5F}, /* Extensions C, D, E, F, I */
  {0x2F800, 0x2FA1F}, /* CJK Compatibility Ideographs Supplement */
  {0x30000, 0x323AF}, /* Extensions G, H */
};

int cjk_is_cjk(unsigned cp) {
  int lo = 0, hi = (int)(sizeof(aCjkRange) / sizeof(aCjkRange[0])) - 1;
  if (cp < 0x1100) return 0; /* fast paths: Latin, Greek, Cyrillic, Arabic ... */
  if (cp >= 0x4E00 && cp <= 0x9FFF) return 1; /* then the commonest blocks */
  if (cp >= 0xAC00 && cp <= 0xD7A3) return 1;
  if (cp >= 0x3041 && cp <= 0x30FA) return cp != 0x30A0 && (cp <= 0x3096 || cp >= 0x3099);
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < aCjkRange[mid][0]) {
      hi = mid - 1;
    } else if (cp > aCjkRange[mid][1]) {
      lo = mid + 1;
    } else {
      return 1;
    }
  }
  return 0;
}

int cjk_classify_utf32(const uint32_t *aCp, int n, unsigned char *aOut) {
  int i, nCjk = 0;
  for (i = 0; i < n; i++) {
    aOut[i] = (unsigned char)(cjk_is_cjk(aCp[i]) ? 1 : 0);
    nCjk += aOut[i];
  }
  return nCjk;
}

int cjk_range_count(void) { return (int)(sizeof(aCjkRange) / sizeof(aCjkRange[0])); }

unsigned cjk_range_bound(int i, int bHigh) {
  if (i < 0 || i >= cjk_range_count()) return 0;
  return aCjkRange[i][bHigh ? 1 : 0];
}

/* The <narrow> decompositions of U+FF61..U+FFDC (0: unassigned). */
static const unsigned short aHalfWidth[] = {
  0x3002, 0x300C, 0x300D, 0x3001, 0x30FB, 0x30F2, 0x30A1, 0x30A3, 0x30A5, 0x30A7,
  0x30A9, 0x30E3, 0x30E5, 0x30E7, 0x30C3, 0x30FC, 0x30A2, 0x30A4, 0x30A6, 0x30A8,
  0x30AA, 0x30AB, 0x30AD, 0x30AF, 0x30B1, 0x30B3, 0x30B5, 0x30B7, 0x30B9, 0x30BB,
  0x30BD, 0x30BF, 0x30C1, 0x30C4, 0x30C6, 0x30C8, 0x30CA, 0x30CB, 0x30CC, 0x30CD,
  0x30CE, 0x30CF, 0x30D2, 0x30D5, 0x30D8, 0x30DB, 0x30DE, 0x30DF, 0x30E0, 0x30E1,
  0x30E2, 0x30E4, 0x30E6, 0x30E8, 0x30E9, 0x30EA, 0x30EB, 0x30EC, 0x30ED, 0x30EF,
  0x30F3, 0x3099, 0x309A, 0x3164, 0x3131, 0x3132, 0x3133, 0x3134, 0x3135, 0x3136,
  0x3137, 0x3138, 0x3139, 0x313A, 0x313B, 0x313C, 0x313D, 0x313E, 0x313F, 0x3140,
  0x3141, 0x3142, 0x3143, 0x3144, 0x3145, 0x3146, 0x3147, 0x3148, 0x3149, 0x314A,
  0x314B, 0x314C, 0x314D, 0x314E, 0, 0, 0, 0x314F, 0x3150, 0x3151,
  0x3152, 0x3153, 0x3154, 0, 0, 0x3155, 0x3156, 0x3157, 0x3158, 0x3159,
  0x315A, 0, 0, 0x315B, 0x315C, 0x315D, 0x315E, 0x315F, 0x3160, 0,
  0, 0x3161, 0x3162, 0x3163,
};

unsigned cjk_fold_width(unsigned cp) {
  if (cp >= 0xFF01 && cp <= 0xFF5E) return cp - 0xFEE0;
  if (cp >= 0xFF61 && cp <= 0xFFDC) {
    unsigned w = aHalfWidth[cp - 0xFF61];
    return w ? w : cp;
  }
  return cp;
}

/* Kana + combining voiced / semi-voiced mark -> precomposed kana (NFC). */
static const unsigned short aVoiced[][3] = {
  {0x3046, 0x3099, 0x3094}, {0x304B, 0x3099, 0x304C}, {0x304D, 0x3099, 0x304E}, {0x304F, 0x3099, 0x3050},
  {0x3051, 0x3099, 0x3052}, {0x3053, 0x3099, 0x3054}, {0x3055, 0x3099, 0x3056}, {0x3057, 0x3099, 0x3058},
  {0x3059, 0x3099, 0x305A}, {0x305B, 0x3099, 0x305C}, {0x305D, 0x3099, 0x305E}, {0x305F, 0x3099, 0x3060},
  {0x3061, 0x3099, 0x3062}, {0x3064, 0x3099, 0x3065}, {0x3066, 0x3099, 0x3067}, {0x3068, 0x3099, 0x3069},
  {0x306F, 0x3099, 0x3070}, {0x306F, 0x309A, 0x3071}, {0x3072, 0x3099, 0x3073}, {0x3072, 0x309A, 0x3074},
  {0x3075, 0x3099, 0x3076}, {0x3075, 0x309A, 0x3077}, {0x3078, 0x3099, 0x3079}, {0x3078, 0x309A, 0x307A},
  {0x307B, 0x3099, 0x307C}, {0x307B, 0x309A, 0x307D}, {0x309D, 0x3099, 0x309E}, {0x30A6, 0x3099, 0x30F4},
  {0x30AB, 0x3099, 0x30AC}, {0x30AD, 0x3099, 0x30AE}, {0x30AF, 0x3099, 0x30B0}, {0x30B1, 0x3099, 0x30B2},
  {0x30B3, 0x3099, 0x30B4}, {0x30B5, 0x3099, 0x30B6}, {0x30B7, 0x3099, 0x30B8}, {0x30B9, 0x3099, 0x30BA},
  {0x30BB, 0x3099, 0x30BC}, {0x30BD, 0x3099, 0x30BE}, {0x30BF, 0x3099, 0x30C0}, {0x30C1, 0x3099, 0x30C2},
  {0x30C4, 0x3099, 0x30C5}, {0x30C6, 0x3099, 0x30C7}, {0x30C8, 0x3099, 0x30C9}, {0x30CF, 0x3099, 0x30D0},
  {0x30CF, 0x309A, 0x30D1}, {0x30D2, 0x3099, 0x30D3}, {0x30D2, 0x309A, 0x30D4}, {0x30D5, 0x3099, 0x30D6},
  {0x30D5, 0x309A, 0x30D7}, {0x30D8, 0x3099, 0x30D9}, {0x30D8, 0x309A, 0x30DA}, {0x30DB, 0x3099, 0x30DC},
  {0x30DB, 0x309A, 0x30DD}, {0x30EF, 0x3099, 0x30F7}, {0x30F0, 0x3099, 0x30F8}, {0x30F1, 0x3099, 0x30F9},
  {0x30F2, 0x3099, 0x30FA}, {0x30FD, 0x3099, 0x30FE},
};

unsigned cjk_compose_voiced(unsigned base, unsigned mark) {
  int lo = 0, hi = (int)(sizeof(aVoiced) / sizeof(aVoiced[0])) - 1;
  if (mark != 0x3099 && mark != 0x309A) return 0;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    unsigned b = aVoiced[mid][0], m = aVoiced[mid][1];
    if (base < b || (base == b && mark < m)) {
      hi = mid - 1;
    } else if (base > b || mark > m) {
      lo = mid + 1;
    } else {
      return aVoiced[mid][2];
    }
  }
  return 0;
}

int cjk_is_variation_selector(unsigned cp) {
  return (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE0100 && cp <= 0xE01EF);
}

int cjk_skip_variation_selectors(const unsigned char *z, int n, int j) {
  /* U+FE00..FE0F is EF B8 80..8F; U+E0100..E01EF is F3 A0 84..87 xx: test the
  ** lead byte before decoding, since almost no text has either. */
  while (j < n && (z[j] == 0xEF || z[j] == 0xF3)) {
    unsigned cp;
    int k = cjk_utf8_next(z, n, j, &cp);
    if (!cjk_is_variation_selector(cp)) break;
    j = k;
  }
  return j;
}

int cjk_fold_utf8(const char *zIn, int n, char *zOut, int nOut, int bVariants) {
  const unsigned char *z = (const unsigned char *)zIn;
  int i = 0, o = 0;
  while (i < n) {
    unsigned cp, cp2;
    int iNext = cjk_utf8_next(z, n, i, &cp);
    unsigned char buf[4];
    int k, nb;
    if (cp == 0xFFFD) { /* malformed (or a real U+FFFD): copy the bytes as they are */
      for (k = i; k < iNext; k++) {
        if (o < nOut) zOut[o] = (char)z[k];
        o++;
      }
      i = iNext;
      continue;
    }
    cp = cjk_fold_width(cp);
    if (iNext < n) { /* compose a following voiced mark */
      int iNext2 = cjk_utf8_next(z, n, iNext, &cp2);
      unsigned c = cjk_compose_voiced(cp, cjk_fold_width(cp2));
      if (c) {
        cp = c;
        iNext = iNext2;
      }
    }
    if (cjk_is_cjk(cp)) {
      iNext = cjk_skip_variation_selectors(z, n, iNext);
      if (bVariants) cp = cjk_fold_variant(cp);
    }
    nb = cjk_utf8_put(cp, buf);
    for (k = 0; k < nb; k++) {
      if (o < nOut) zOut[o] = (char)buf[k];
      o++;
    }
    i = iNext;
  }
  return o;
}
