"""The inline UTF-8 fast paths in csrc give the same answers as the definitions they stand for.

The tokenizer's decoder (``cjk_utf8_next``, csrc/cjk_chars.h) and the snippet
rule's strict decoder and white-space test (``cjk_utf8_step``/``cjk_space_cp``,
csrc/cjk_snippet.h) take ASCII and well-formed three-byte characters inline and
hand everything else to the out-of-line definitions (``cjk_utf8_decode``,
``cjk_utf8_strict``, ``cjk_snip_is_space``).  A small C program compares each
pair on every lead byte and second byte, with third and fourth bytes from the
edges of every UTF-8 byte class, at every input length from 1 to 4; and checks
that every code point ``cjk_utf8_put`` encodes decodes back to itself.  A
fast path that read past the input, took an overlong form, a surrogate,
U+FFFE/U+FFFF or a sequence with a stray continuation byte as well-formed,
would make the tokenizer or the snippet rule disagree with themselves.  And
``cjk_ascii_end`` (where ASCII ends, eight bytes at a time) answers as a
byte-at-a-time scan does, from every start in buffers with a high byte at
every place; ``cjk_utf8_run3`` (where a run of three-byte characters ends, 24
bytes at a time) as ``cjk_utf8_is3`` a character at a time does, with a byte
that breaks the run at every place.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _c_compiler import check_program  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "cjk_chars.h"
#include "cjk_snippet.h"

static const unsigned char aEdge[] = {0x00, 0x41, 0x7F, 0x80, 0x81, 0x8F, 0x90, 0x9F, 0xA0,
                                      0xBE, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xEF, 0xF4, 0xFF};

int main(void) {
  long nBad = 0, nChecked = 0;
  unsigned a, b, cp;
  int l, s, t, u, n, ia, ib;
  unsigned char z[4];
  for (l = 0; l < 256; l++) {
    for (s = 0; s < 256; s++) {
      for (t = 0; t < (int)sizeof(aEdge); t++) {
        for (u = 0; u < (int)sizeof(aEdge); u++) {
          z[0] = (unsigned char)l;
          z[1] = (unsigned char)s;
          z[2] = aEdge[t];
          z[3] = aEdge[u];
          for (n = 1; n <= 4; n++) {
            ia = cjk_utf8_next(z, n, 0, &a);
            ib = cjk_utf8_decode(z, n, 0, &b);
            if (ia != ib || a != b) {
              if (nBad++ < 5) printf("next %02X %02X %02X %02X n=%d: %d %X, decode %d %X\n", z[0], z[1], z[2], z[3], n, ia, a, ib, b);
            }
            ia = cjk_utf8_step(z, n, 0, &a);
            ib = cjk_utf8_strict(z, n, 0, &b);
            if (ia != ib || a != b) {
              if (nBad++ < 5) printf("step %02X %02X %02X %02X n=%d: %d %X, strict %d %X\n", z[0], z[1], z[2], z[3], n, ia, a, ib, b);
            }
            nChecked += 2;
          }
        }
      }
    }
  }
  for (cp = 0; cp <= CJK_BADCHAR; cp++) {
    if (cjk_space_cp(cp) != cjk_snip_is_space(cp)) {
      if (nBad++ < 5) printf("space %X\n", cp);
    }
    if (cp < CJK_BADCHAR && (cp < 0xD800 || cp > 0xDFFF)) {
      unsigned char aOut[4];
      int nOut = cjk_utf8_put(cp, aOut);
      ia = cjk_utf8_step(aOut, nOut, 0, &a);
      if (ia != nOut || a != cp) {
        if (nBad++ < 5) printf("put %X: step %d %X\n", cp, ia, a);
      }
      if ((cp & 0xFFFE) != 0xFFFE) {
        ia = cjk_utf8_next(aOut, nOut, 0, &a);
        if (ia != nOut || a != cp) {
          if (nBad++ < 5) printf("put %X: next %d %X\n", cp, ia, a);
        }
      }
    }
    nChecked++;
  }
  {
    /* cjk_ascii_end (eight bytes at a time) against a byte at a time: one
    ** byte >= 0x80 (or none) at every place of buffers up to 40 bytes long,
    ** from every start; z2 is exactly n bytes, so ASan sees any read past it. */
    int i, hi, m;
    for (n = 0; n <= 40; n++) {
      for (hi = -1; hi < n; hi++) {
        for (m = 0; m < 2; m++) {
          unsigned char *z2 = malloc(n > 0 ? (size_t)n : 1);
          for (i = 0; i < n; i++) z2[i] = (unsigned char)(m ? 0x7F : 0x20 + i);
          if (hi >= 0) z2[hi] = m ? 0x80 : 0xE4;
          for (i = 0; i <= n; i++) {
            int e = i;
            while (e < n && z2[e] < 0x80) e++;
            if (cjk_ascii_end(z2, i, n) != e) {
              if (nBad++ < 5) printf("ascii_end n=%d high byte at %d from %d: %d, not %d\n", n, hi, i,
                                     cjk_ascii_end(z2, i, n), e);
            }
            nChecked++;
          }
          free(z2);
        }
      }
    }
  }
  {
    /* cjk_utf8_run3 (24 bytes at a time) against cjk_utf8_is3 a character at
    ** a time: runs of 1 to 19 three-byte characters, with each piece that
    ** breaks or ends a run (a lead of every other class, a stray or missing
    ** continuation byte, ASCII), or none, at every place, read from every
    ** start, whole and one byte short (a run cut inside a character: a read
    ** past the end shows as a difference). */
    static const unsigned char aLead[] = {0xE1, 0xE4, 0xE9, 0xEC, 0xEE, 0xEF};
    static const unsigned char aOdd[] = {0xE0, 0xED, 0xC3, 0xF0, 0x41, 0x80, 0xBF, 0xC0, 0xFF, 0xE2};
    unsigned seed = 1;
    int nChar, at, iOdd, i, k, o;
    for (nChar = 1; nChar <= 19; nChar++) {
      int nBuf = nChar * 3;
      for (at = 0; at < nBuf; at++) {
        for (iOdd = 0; iOdd <= (int)sizeof(aOdd); iOdd++) {
          unsigned char *z2 = malloc((size_t)nBuf);
          for (k = 0; k < nChar; k++) {
            seed = seed * 1103515245u + 12345u;
            z2[3 * k] = aLead[(seed >> 16) % sizeof(aLead)];
            z2[3 * k + 1] = (unsigned char)(0x80 + ((seed >> 8) & 0x3F));
            z2[3 * k + 2] = (unsigned char)(0x80 + ((seed >> 20) & 0x3F));
          }
          if (iOdd < (int)sizeof(aOdd)) z2[at] = aOdd[iOdd];
          for (o = 0; o < 2; o++) {
            int m = nBuf - o;
            for (i = 0; i <= m; i++) {
              int uFast = 0, uSlow = 0, e = i, f = cjk_utf8_run3(z2, i, m, &uFast);
              while (e < m && cjk_utf8_is3(z2, m, e)) {
                e += 3;
                uSlow++;
              }
              if (f != e || uFast != uSlow) {
                if (nBad++ < 5) printf("run3 %d chars, byte %02X at %d, from %d of %d: %d/%d, not %d/%d\n", nChar,
                                       z2[at], at, i, m, f, uFast, e, uSlow);
              }
              nChecked++;
            }
          }
          free(z2);
        }
      }
    }
  }
  printf("checked %ld, differing %ld\n", nChecked, nBad);
  return nBad != 0;
}
"""


def test_fast_paths_agree_with_their_definitions(tmp_path):
    out = check_program(tmp_path, "utf8_check", "the UTF-8 check", PROGRAM,
                        ("cjk_chars.c", "cjk_snippet.c", "cjk_variants.c"))
    assert "differing 0" in out
