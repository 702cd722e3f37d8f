"""The snippet rule reads a text only around its focus, and chooses the same
window as it would having measured the whole text.

``cjk_snip_choose`` (csrc/cjk_snippet.c) does not count every character of a
text: past the region around the focus it reads on only to the first
non-space character beyond what its edge phases compare with, and keeps lower
bounds for the character count and the end of the last non-space character;
and when the caller gives the focus's byte offset (cjk_match does), it starts
reading a little before the focus instead of at the text's start.  A small C
program includes the chooser and runs its phases twice on random texts --
once as shipped, with most matches' byte offsets given (the first byte of
their character or one inside it), once with those two numbers measured over
the whole text and no byte offset given -- and compares every output: the window, both cut flags, the first
highlight shown, the region and its byte offsets, and the return code.  The
texts mix ASCII words, sentence ends, CJK, full-width and ASCII white space,
combining marks, joiners, four-byte characters and invalid bytes, with long
runs of white space at either end (where a lower bound could change "does the
trimmed text fit"), and work spaces sized as Python sizes them (by characters), as
cjk_match does (by bytes), and too small (the chooser's error).
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _c_compiler import check_program  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "cjk_snippet.c" /* the phases are static */

static unsigned long long gState = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n) {
  gState ^= gState << 13;
  gState ^= gState >> 7;
  gState ^= gState << 17;
  return (unsigned)((gState >> 32) % n);
}

/* Pieces a text is made of (bytes, possibly invalid UTF-8). */
static const char *azPiece[] = {
  "a", "word", " ", " ", "  ", "\t", "\n", ". ", ".", "!=", "; ", "\xE3\x80\x82", "\xE4\xB8\xAD",
  "\xE6\x96\x87\xE5\xAD\x97", "\xE3\x80\x80", "\xCC\x81", "\xE2\x80\x8D", "\xF0\x9F\x98\x80",
  "\xF0\x9F\x8F\xBB", "\xFF", "\x80", "\xE4\xB8", "\xED\xA0\x80", "\xEF\xB8\x8F", "\xC2\xA0", "x.y",
};
#define N_PIECE ((unsigned)(sizeof(azPiece) / sizeof(azPiece[0])))

static int textAppend(unsigned char *z, int n, int nMax, const char *zPiece) {
  int k = (int)strlen(zPiece);
  if (n + k > nMax) return n;
  memcpy(z + n, zPiece, (size_t)k);
  return n + k;
}

/* Characters in z[0..n), first non-space and end of last non-space. */
static void measureAll(const unsigned char *z, int n, int *pChar, int *pFirst, int *pLastEnd) {
  int b = 0, u = 0, first = -1, last = 0;
  while (b < n) {
    unsigned cp;
    b = cjk_utf8_step(z, n, b, &cp);
    if (!cjk_space_cp(cp)) {
      if (first < 0) first = u;
      last = u + 1;
    }
    u++;
  }
  *pChar = u;
  *pFirst = first < 0 ? u : first;
  *pLastEnd = last;
}

/* A byte of character u (its first, or at random one inside it), as
** cjk_match knows it. */
static int byteOf(const unsigned char *z, int n, int u) {
  int b = 0, k, bNext;
  unsigned cp;
  for (k = 0; k < u && b < n; k++) b = cjk_utf8_step(z, n, b, &cp);
  if (b >= n) return b;
  bNext = cjk_utf8_step(z, n, b, &cp);
  return rnd(2) ? b : b + (int)rnd((unsigned)(bNext - b));
}

/* The reference: the chooser's phases with the whole text measured first
** (and read from its start: the matches' bytes are not given). */
static int chooseMeasured(const unsigned char *z, int n, long long nMax, CjkSnipWork *w, CjkSnipWindow *pOut) {
  Snip s;
  int i, nChar, first, lastEnd;
  memset(&s, 0, sizeof(s));
  s.W = nMax < 1 ? 1 : nMax;
  for (i = 0; i < w->nHit; i++) {
    if (w->aHit[i].iPhrase < 0 || w->aHit[i].iPhrase >= w->nPhrase) return 1;
  }
  measureAll(z, n, &nChar, &first, &lastEnd);
  if (cjk_snip_region_size(s.W, nChar) > w->nRegionAlloc) return 1;
  s.iFirstNonSpace = first;
  s.nChar = nChar;
  s.iLastNonSpaceEnd = lastEnd;
  snipMerge(w);
  snipFocus(w, &s);
  snipScan(z, n, w, &s);
  s.nChar = nChar; /* what the scan found is replaced by the whole text's */
  s.iLastNonSpaceEnd = lastEnd;
  snipEdges(&s, w, pOut);
  return 0;
}

typedef struct Work {
  CjkSnipWork w;
  CjkSnipHit aHit[8];
  CjkSnipRange aRange[8];
  int aCnt[4];
  unsigned aCp[1000];
  int aOff[1001];
} Work;

static const int aBudget[] = {1, 2, 3, 5, 8, 13, 30, 64, 120, 198};

int main(int argc, char **argv) {
  long nRun = argc > 1 ? atol(argv[1]) : 200000, nBad = 0, nLong = 0, iRun;
  static unsigned char z[4000];
  static Work a, b;
  for (iRun = 0; iRun < nRun; iRun++) {
    int n = 0, nChar, first, lastEnd, i, k, rcA, rcB, W, nLead, nTail, nHit, nPhrase, nAlloc;
    CjkSnipWindow winA, winB;
    /* white space before, a body of random pieces, white space after */
    nLead = rnd(4) == 0 ? (int)rnd(600) : (int)rnd(3);
    nTail = rnd(4) == 0 ? (int)rnd(600) : (int)rnd(3);
    for (i = 0; i < nLead; i++) n = textAppend(z, n, (int)sizeof(z), rnd(5) ? " " : "\xE3\x80\x80");
    k = rnd(3) == 0 ? (int)rnd(12) : (int)rnd(400);
    for (i = 0; i < k; i++) n = textAppend(z, n, (int)sizeof(z), azPiece[rnd(N_PIECE)]);
    for (i = 0; i < nTail; i++) n = textAppend(z, n, (int)sizeof(z), rnd(5) ? " " : "\n");
    if (rnd(8) == 0) n = textAppend(z, n, (int)sizeof(z), "tail");
    measureAll(z, n, &nChar, &first, &lastEnd);
    W = aBudget[rnd((unsigned)(sizeof(aBudget) / sizeof(aBudget[0])))];
    nPhrase = 1 + (int)rnd(3);
    nHit = nChar > 0 ? (int)rnd(6) : 0;
    for (i = 0; i < nHit; i++) {
      int s0 = (int)rnd((unsigned)nChar), len = 1 + (int)rnd(rnd(5) == 0 ? 300u : 4u);
      a.aHit[i].iStart = s0;
      a.aHit[i].iEnd = s0 + len > nChar ? nChar : s0 + len;
      a.aHit[i].iPhrase = (int)rnd((unsigned)nPhrase);
      a.aHit[i].iByte = rnd(4) ? byteOf(z, n, s0) : -1;
      a.aHit[i].iRange = -1;
    }
    /* work space sized by characters (Python) or by bytes (cjk_match), or too small (an error) */
    nAlloc = cjk_snip_region_size(W, rnd(8) == 0 ? (int)rnd((unsigned)nChar + 1) : rnd(2) ? nChar : n);
    memcpy(b.aHit, a.aHit, sizeof(a.aHit));
    for (i = 0; i < nHit; i++) b.aHit[i].iByte = -1;
    a.w.aHit = a.aHit; a.w.aRange = a.aRange; a.w.aCnt = a.aCnt; a.w.aCp = a.aCp; a.w.aOff = a.aOff;
    b.w.aHit = b.aHit; b.w.aRange = b.aRange; b.w.aCnt = b.aCnt; b.w.aCp = b.aCp; b.w.aOff = b.aOff;
    a.w.nHit = b.w.nHit = nHit;
    a.w.nPhrase = b.w.nPhrase = nPhrase;
    a.w.nRegionAlloc = b.w.nRegionAlloc = nAlloc;
    memset(&winA, 0, sizeof(winA));
    memset(&winB, 0, sizeof(winB));
    rcA = cjk_snip_choose(z, n, W, &a.w, &winA);
    rcB = chooseMeasured(z, n, W, &b.w, &winB);
    if (lastEnd > first + 2 * W + 3) nLong++;
    if (rcA != rcB || (rcA == 0 && (winA.iStart != winB.iStart || winA.iEnd != winB.iEnd ||
        winA.bCutBefore != winB.bCutBefore || winA.bCutAfter != winB.bCutAfter ||
        winA.iFirstShown != winB.iFirstShown || winA.iRegion != winB.iRegion ||
        a.aOff[winA.iStart - winA.iRegion] != b.aOff[winB.iStart - winB.iRegion] ||
        a.aOff[winA.iEnd - winA.iRegion] != b.aOff[winB.iEnd - winB.iRegion]))) {
      if (nBad++ < 5) {
        printf("run %ld: n=%d chars=%d W=%d hits=%d: rc %d/%d window [%d,%d) cut %d,%d shown %d vs "
               "[%d,%d) cut %d,%d shown %d\n", iRun, n, nChar, W, nHit, rcA, rcB, winA.iStart, winA.iEnd,
               winA.bCutBefore, winA.bCutAfter, winA.iFirstShown, winB.iStart, winB.iEnd, winB.bCutBefore,
               winB.bCutAfter, winB.iFirstShown);
      }
    }
  }
  printf("runs %ld, texts longer than the region %ld, differing %ld\n", nRun, nLong, nBad);
  return nBad != 0 || nLong < nRun / 10;
}
"""


def test_the_window_is_the_one_a_whole_text_measure_gives(tmp_path):
    out = check_program(tmp_path, "snippet_scan_check", "the snippet scan check", PROGRAM,
                        ("cjk_chars.c", "cjk_variants.c"), "200000")
    assert "differing 0" in out
