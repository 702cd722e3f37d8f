/*
** cjk_tokenizer.h — the cjk_unicode61 FTS5 tokenizer.
**
** Semantics (the paragraph users can trust):
**   Text that is not CJK is handed, untouched apart from width folding, to the
**   host's own unicode61 tokenizer with the same arguments, so it yields the
**   very tokens, positions and byte offsets unicode61 would.  Each maximal run
**   of CJK letters (see cjk_chars.h) becomes overlapping bigrams, one position
**   each: 大别山 -> 大别, 别山.  A one-character run is a unigram.  When
**   tokenizing documents (any mode but QUERY), the last character of a longer
**   run is also emitted as a unigram colocated with the run's last bigram, so
**   every occurrence of a character X starts a bigram or is a run-final
**   unigram, and the prefix query "X"* finds all of them.  When two CJK runs
**   have no token between them (only punctuation or spaces) and the second
**   starts with the character the first ended with, a gap token
**   (CJK_GAP_TOKEN, one position) keeps them apart, so the phrase for ABC never
**   matches "AB。BC" (runs that don't share that character cannot form a false
**   phrase).  Full-width ASCII folds to ASCII and half-width katakana and
**   Hangul to their full-width forms, in documents and queries alike, with
**   offsets pointing at the original bytes.  Invalid UTF-8 is a separator: every
**   sequence cjk_utf8_next() reads as malformed (overlong forms, surrogates,
**   beyond U+10FFFF, U+FFFE/U+FFFF, stray or missing continuation bytes) ends
**   the token before it, even where SQLite's own reader would decode a letter.
**   Variation selectors (U+FE00..FE0F, U+E0100..E01EF) after a CJK letter
**   belong to it: they do not split the run, are not part of any token, and
**   the letter's offsets cover them (辻+U+E0101 村 -> 辻村).  The option
**   fold_variants 1 (default 0) folds Han variants to one canonical form
**   (cjk_variants.h: 項目 and 项目 both become 项目), again in documents and
**   queries alike and with offsets on the original bytes.  Option
**   "unigrams 1" (default 0): documents also get every CJK character as a
**   unigram colocated with the bigram it starts, so the plain string "X"
**   finds every occurrence of X; queries are tokenized as without it.  Every
**   other option is unicode61's and is passed to it; a CJK letter named in
**   "separators" is a separator, so it ends a run and is not indexed.
*/
#ifndef CJK_TOKENIZER_H
#define CJK_TOKENIZER_H

#include "cjk_api.h"
#include "cjk_host.h"

#define CJK_TOKENIZER_NAME "cjk_unicode61"
/* Token text of the gap between two CJK runs: U+001E, which unicode61 never
** emits (control characters are separators) and no query can spell. */
#define CJK_GAP_TOKEN "\x1e"

/* Check tokenizer arguments the way table creation will.  Returns 0 if they
** are valid, else non-zero with a message in zErr (NUL-terminated, truncated
** to nErr bytes).  SQLite itself only says "error in tokenizer constructor",
** so Python calls this to say what is wrong. */
CJK_API int cjk_check_args(const char **azArg, int nArg, char *zErr, int nErr);

/* Register cjk_unicode61 with pFts5: through xCreateTokenizer_v2 when
** fts5_api.iVersion >= 3 (the instances then reach unicode61 through
** fts5_tokenizer_v2, locale included), else xCreateTokenizer.  The host's
** allocator is copied into the registration and into every instance. */
int cjk_tokenizer_register(fts5_api *pFts5, const CjkHost *pHost);

#endif /* CJK_TOKENIZER_H */
