/*
** cjk_aux.h — cjk_match(), the reasoning-aware FTS5 auxiliary function.
**
** SQL signature (an FTS5 auxiliary function: the first argument is the table):
**
**   cjk_match(tbl, labels [, max_chars [, open [, close [, ellipsis
**                                       [, max_matches [, layout]]]]]])
**
**   labels     comma-separated column labels in the table's column order, e.g.
**              'content,reasoning,tool_name,tool_calls'.  FTS5 hands auxiliary
**              functions column indexes only; these are the names reported.
**              Spaces around a label are trimmed; a missing or empty label is
**              reported as the column's index ("2").  Extra labels are ignored.
**   max_chars  snippet size in characters (Unicode code points of the column
**              text, markers and ellipses not counted); a number of at least
**              1, its fraction dropped (2.7 means 2), default 200 (NULL also
**              means the default).  Here and for max_matches, text that is
**              a number and nothing else ('80', as Datasette binds a query
**              parameter) counts as that number.
**   open, close, ellipsis
**              highlight markers and the cut marker; defaults "**", "**" and
**              "…" (U+2026).  NULL means the default.
**   max_matches  how many highlights "matches" lists, default 100 (NULL
**              also means the default; a fraction is dropped); 0 lists none, for a caller that
**              needs only the snippet and its first highlight.
**   layout     'object' (the default; NULL too), 'array' or 'fields'.
**              'array': the same values in the same order without their
**              names, for a caller that reads the result in code and pays per
**              key it parses: [matched_in, column, snippet, start, end,
**              window, cut, matches, match_count].
**              'fields': no JSON, for a caller that pays per value it parses:
**              ten text fields joined by U+001F (the unit separator),
**                matched_in  the labels joined by ","
**                column      its label (empty when the table has no column)
**                start, end  digits, or empty for null
**                window      its start, then its end: two fields
**                cut         "1" or "0" before, then after: two fields
**                match_count digits
**                snippet     as it is, unescaped, last: it may hold U+001F
**              so a split at the first nine separators reads it whole.  There
**              "matches" is left out (max_matches is ignored), and a label
**              holding a control character is written as the column's number.
**
** Result: a JSON object (valid UTF-8 text; an array or fields by layout):
**
**   {"matched_in": ["content", "reasoning"],   columns in which any query phrase
**                                              has an instance, in column order
**    "column": "content",                      the column the snippet comes from
**    "snippet": "…text with **match**…",
**    "start": 12, "end": 15,                   the first highlight shown in the
**                                              snippet, as character offsets
**                                              [start, end) into the column text
**                                              (null when nothing is highlighted),
**                                              whole: one longer than the window
**                                              reaches past it, and the snippet
**                                              shows its part inside the window
**    "window": [0, 80],                        [start, end) of the column text
**                                              the snippet shows (characters)
**    "cut": [false, true],                     whether an ellipsis stands before
**                                              / after it (text left out)
**    "matches": [[12, 15], [40, 43]],          every highlight in the column
**                                              (characters), first max_matches only
**    "match_count": 2}                         how many highlights in all
**
** Rules:
**   - Instances come from xInstCount/xInst.  The snippet column is the matched
**     column with the most distinct query phrases; ties go to the lowest column
**     index, so put the visible column (content) first in the table.  A row
**     with no instance anywhere (e.g. a full-table scan) shows the first column
**     with any non-space text, from its start, with matched_in = [].
**   - An instance (phrase p, offset o) covers token positions o..o+size(p)-1,
**     counted the way FTS5 counts them when it indexes: the column is
**     re-tokenized with the table's tokenizer (xTokenize, FTS5_TOKENIZE_AUX),
**     each token not flagged FTS5_TOKEN_COLOCATED starts a new position, a
**     colocated one shares the previous position.  Where several tokens share a
**     position (a run-final unigram colocated with its bigram), the one equal to
**     the query token (xQueryToken) is used, with those it is a prefix of when
**     the instance is the phrase's last token, since FTS5 does not tell an
**     auxiliary function whether a phrase was a prefix query ("山"* matches
**     both tokens of a run ending 山山, so an exact "山" there marks both too);
**     failing those, all of them.  Hosts with
**     Fts5ExtensionApi.iVersion < 3 (SQLite before 3.45) have no xQueryToken:
**     there the query token is inferred from the row (the longest token, or
**     its first character, that every instance of the phrase in the column
**     starts with), so a lone instance of "山"* at a run end highlights its
**     bigram, as highlight() does, and so do several instances that all
**     start the same bigram (项目，项目); instances of different tokens resolve.
**     Two different guesses that fit every instance alike (山大a大山 for
**     "大": the unigrams 山 and 大 stand at both instances) leave the token
**     unknown, so every token at the position is marked, the match with it.  A CJK n-gram
**     matched by a shorter prefix ("山"* against the bigram 山项) is highlighted
**     only as far as the prefix reaches (山).  The byte ranges of an instance's
**     tokens are joined, and overlapping or touching instances merged, so
**     overlapping bigrams highlight once, without doubled or cut characters.
**   - Character offsets count code points of the column text decoded the way
**     Python's bytes.decode("utf-8", "replace") does: each maximal invalid
**     subsequence of bytes is one U+FFFD character, and is output as U+FFFD.
**     Highlight and window edges always fall on those character boundaries.
**   - Window: chosen by the one snippet rule, stated once at the top of
**     cjk_snippet.h (the same code snippet.py calls for every other route),
**     with max_chars as its budget and the instances' highlights as its
**     matches.  So the snippet shows at most max_chars characters of the
**     column, plus the ellipses.
**   - Works on any FTS5 table (any tokenizer, external-content and contentless
**     tables; on a contentless table the snippet is empty), detail=full for
**     exact highlights.  No process-global state: the host routines travel in
**     the registration's user data.
*/
#ifndef CJK_AUX_H
#define CJK_AUX_H

#include "cjk_host.h"

#define CJK_MATCH_NAME "cjk_match"

/* Register cjk_match with pFts5.  Host routines are copied into the
** registration, so two SQLite libraries in one process never share. */
int cjk_aux_register(fts5_api *pFts5, const CjkHost *pHost);

/* Register xFunc as the auxiliary function zName, its user data (xUserData)
** a copy of *pHost that FTS5 frees with the host's allocator. */
int cjk_aux_create(fts5_api *pFts5, const CjkHost *pHost, const char *zName, fts5_extension_function xFunc);

/* cjk_match's xToken when it re-tokenizes a column (pCtx is its collector).
** It keeps only the tokens at the instances' positions, and most tokens of a
** long column lie at none.  So cjk_unicode61 (cjk_tokenizer.c), seeing this
** function as its xToken, counts the tokens at positions the collector does
** not need instead of emitting them (whole ASCII tokens, a CJK run's bigrams,
** unigrams and gaps): cjk_collect_skippable() tells how many positions it may
** pass (-1: none wanted any more, stop), cjk_collect_skip() counts them.  The
** positions, and every token the collector keeps, are those of the full
** tokenization; any other tokenizer just emits every token. */
int cjk_collect_token(void *pCtx, int tflags, const char *pToken, int nToken, int iStart, int iEnd);
int cjk_collect_skippable(void *pCtx);
void cjk_collect_skip(void *pCtx, int nToken);

/* Before it tokenizes for the collector, cjk_unicode61 may offer it the text
** (zText, nText) with this promise: the phrase of the overlapping bigrams of
** a run of two or more plain CJK letters (cjk_plain_at) matches only where
** the run's bytes stand in the text, and it matches wherever they stand
** (unless a malformed byte follows them).  That holds when the tokenizer has
** no separators= (which may split runs) and folds no variants, and the text
** holds no character it reads as another letter or joins to the one before
** (a variation selector, a voiced sound mark, a half-width kana).  When each
** phrase with instances in the column is such a run, the collector places
** those instances where the runs occur, and sets *pbPlaced: the tokenizer
** then returns at once.  Otherwise *pbPlaced is 0 and it tokenizes.
** Returns SQLITE_OK or SQLITE_NOMEM.  cjk_collect_planned() tells first
** whether each phrase is such a run, so that the tokenizer looks for those
** characters only then. */
int cjk_collect_literal(void *pCtx, const char *zText, int nText, int *pbPlaced);
int cjk_collect_planned(void *pCtx);

#endif /* CJK_AUX_H */
